# A small mix of what Python programs do: integer loops, a sieve in a list, dicts and
# strings, recursion, objects with methods.  Prints a deterministic checksum.
def sieve(n):
    flags = [True] * (n + 1)
    flags[0] = flags[1] = False
    i = 2
    while i * i <= n:
        if flags[i]:
            for j in range(i * i, n + 1, i):
                flags[j] = False
        i += 1
    return sum(1 for f in flags if f)

def words(n):
    counts = {}
    for i in range(n):
        w = "w%d" % ((i * 7919) % 1009)
        counts[w] = counts.get(w, 0) + 1
    return len(counts), max(counts.values())

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

class Vec:
    __slots__ = ("x", "y")
    def __init__(self, x, y):
        self.x, self.y = x, y
    def add(self, o):
        return Vec(self.x + o.x, self.y + o.y)
    def dot(self, o):
        return self.x * o.x + self.y * o.y

def objects(n):
    acc = Vec(0, 0)
    s = 0
    for i in range(n):
        v = Vec(i % 13, i % 7)
        acc = acc.add(v)
        s += acc.dot(v) % 1000003
    return s

print("sieve", sieve(300000))
print("words", words(150000))
print("fib", fib(22))
print("objects", objects(100000))
