// The executable of the hostile JVM (hostile_jvm.c, built as libjvm.so): hostile_jvm SECONDS.
int hostile_jvm_main(int argc, char** argv);

int main(int argc, char** argv) { return hostile_jvm_main(argc, argv); }
