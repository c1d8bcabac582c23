h = Hash.new(0)
File.read("text").split.each { |w| h[w] += 1 }
p h.sort_by { |k, v| [-v, k] }.first(5)
def fib(n) n < 2 ? n : fib(n-1) + fib(n-2) end
p fib(22)
p (1..100000).map { |i| i * i % 7 }.sum
