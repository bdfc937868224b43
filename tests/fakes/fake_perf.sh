#!/bin/sh
# Stands in for perf in the agent's tests. FAKE_PERF_SCRIPT chooses how `perf script` misbehaves
# on a snapshot's data (trial runs during event discovery behave, except with segv-always):
#   segv | segv-always   die by SIGSEGV, as perf script does on some GPU hosts
#   hang                 never finish
#   garbage              print text that is not perf output
#   fail                 complain on stderr and exit with code 1
#   slow                 wait 3 s, then do its work
# `perf record` fails at once while the file named by FAKE_PERF_RECORD_FAILS_IF exists.
# FAKE_PERF_RECORD=deaf: the recording `perf record` (not discovery's trials) records, but its
# process outlives SIGTERM until SIGKILL, as a perf stuck in the kernel would.
# Anything else, and every other subcommand, runs the real perf. Each call is appended to
# $FAKE_PERF_LOG when that is set, and its environment to $FAKE_PERF_ENV_LOG.
[ -n "$FAKE_PERF_LOG" ] && echo "$*" >> "$FAKE_PERF_LOG"
[ -n "$FAKE_PERF_ENV_LOG" ] && env >> "$FAKE_PERF_ENV_LOG"
if [ "$1" = record ] && [ -n "$FAKE_PERF_RECORD_FAILS_IF" ] && [ -e "$FAKE_PERF_RECORD_FAILS_IF" ]; then
  echo "fake perf: failed to open the perf event (broken on purpose)" >&2
  exit 1
fi
if [ "$1" = record ] && [ "$FAKE_PERF_RECORD" = deaf ]; then
  case "$*" in *--switch-output*)
    trap '' TERM
    perf "$@" &
    recording=$!
    trap 'kill -USR2 $recording' USR2  # the agent's "switch output" goes to the real perf
    while kill -0 $recording 2>/dev/null; do wait $recording; done
    while :; do sleep 1; done ;;
  esac
fi
if [ "$1" = script ]; then
  case "$*" in *trial-*) trial=1 ;; *) trial=0 ;; esac
  case "$FAKE_PERF_SCRIPT" in
    segv-always) kill -SEGV $$ ;;
    segv) [ $trial = 0 ] && kill -SEGV $$ ;;
    # A loop, not `exec sleep`: the process keeps perf script's arguments, the temp file's path
    # among them, so a test can tell whether it was left behind.
    hang) [ $trial = 0 ] && while :; do sleep 1; done ;;
    garbage) [ $trial = 0 ] && { echo "Warning: unknown event"; echo "@@ not a sample @@"; exit 0; } ;;
    fail) [ $trial = 0 ] && { echo "fake perf: failed to process sample" >&2; exit 1; } ;;
    slow) [ $trial = 0 ] && sleep 3 ;;
  esac
fi
exec perf "$@"
