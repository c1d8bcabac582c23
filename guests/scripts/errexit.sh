#!/bin/bash
# set -e, set -o pipefail, set -u in subshells; the script's own exit status.
echo "== pipefail"
false | true; echo "no pipefail: $?"
set -o pipefail
false | true; echo "pipefail: $?"
true | (exit 3) | true; echo "pipefail middle: $?"
set +o pipefail
echo "== set -e in subshells"
(set -e; echo before; false; echo "not printed"); echo "subshell status $?"
(set -e; if false; then :; fi; false || echo "|| keeps going"; echo survived)
(set -e; f() { false; echo "in f after false"; }; f || true; echo "after f")
bash -c 'set -e; true; (exit 6); echo no'; echo "bash -c set -e: $?"
(set -eo pipefail; echo start; seq 1 3 | (exit 2) | cat; echo "not here"); echo "pipefail + e: $?"
echo "== set -u"
(set -u; echo "${undefined_var:-fine}"; echo "$undefined_var"; echo never) 2> u.err; echo "set -u: $?"
wc -l < u.err
echo "== exit status of the whole script"
set -e
cd /nonexistent-dir 2> cd.err || echo "cd failed as expected"
false
echo "never printed"
