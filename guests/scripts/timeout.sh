#!/bin/bash
# sleep and timeout with small values.
sleep 0.01; echo "sleep: $?"
sleep 0; echo "sleep 0: $?"
timeout 5 true; echo "timeout true: $?"
timeout 5 false; echo "timeout false: $?"
timeout 0.2 sleep 5; echo "timed out: $?"
# timeout signals its own process group too: with KILL it dies, and bash reports
# that with the pid; keep the words only.
{ timeout -s KILL 0.2 sleep 5; } 2> killed.err; echo "KILL: $?"; tr -d '0-9 ' < killed.err
timeout 5 sh -c 'exit 9'; echo "passes status: $?"
timeout 0.2 bash -c 'trap "" TERM; sleep 0.5; echo survived TERM'; echo "ignored TERM: $?"
{ timeout -k 0.1 0.2 bash -c 'trap "" TERM; sleep 5'; } 2> killed.err; echo "kill after: $?"; tr -d '0-9 ' < killed.err
timeout --preserve-status 0.2 sleep 5; echo "preserve: $?"
