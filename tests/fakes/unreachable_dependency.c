// A library that a module needs and that the loader cannot find (see CMakeLists.txt).
int dormant_unreachable_dependency(void) { return 1; }
