<?php
function fib($n){ return $n<2?$n:fib($n-1)+fib($n-2); }
echo fib(24), "\n";
$a=[]; for($i=0;$i<200000;$i++){ $a["k".($i%1000)] = ($a["k".($i%1000)] ?? 0) + $i; } echo count($a), " ", array_sum($a), "\n";
echo md5(str_repeat("abc", 10000)), "\n";
