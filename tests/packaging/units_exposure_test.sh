#!/usr/bin/env bash
# Both units' exposure, as systemd-analyze scores it, is at most 3.0 ("OK"): a change that loosens
# either sandbox past that fails here (tests/packaging's install test verifies the installed
# units). Usage: units_exposure_test.sh UNIT_DIR
set -uo pipefail
unit_dir=$1
if ! command -v systemd-analyze >/dev/null; then
  echo "SKIPPED: systemd-analyze is not installed (the systemd package)"
  exit 77
fi
failures=0
for unit in dormant-agent dormant-server; do
  file=$unit_dir/$unit.service
  score=$(systemd-analyze security --offline=yes --no-pager "$file" 2>&1 | grep "Overall exposure")
  echo "$score"
  if systemd-analyze security --offline=yes --threshold=30 --no-pager "$file" >/dev/null 2>&1; then
    echo "ok: $unit.service at most 3.0"
  else
    echo "FAILED: $unit.service is above 3.0"
    failures=$((failures + 1))
  fi
done
((failures == 0))
