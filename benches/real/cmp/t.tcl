proc fib {n} { if {$n < 2} {return $n}; return [expr {[fib [expr {$n-1}]] + [fib [expr {$n-2}]]}] }
puts [fib 20]
set s 0; for {set i 0} {$i < 200000} {incr i} { incr s [expr {$i % 13}] }; puts $s
