-- Doubly recursive Fibonacci plus a table workload: calls, returns, table indexing.
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local t = {}
for i = 1, 200000 do t[i] = (i * 7919) % 100003 end
table.sort(t)
local s = 0
for i = 1, #t, 97 do s = s + t[i] end
print("fib", fib(27), "sum", s)
