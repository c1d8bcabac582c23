import threading, queue
q = queue.Queue(maxsize=100)
def prod():
    for i in range(20000): q.put(i)
    q.put(None)
s = 0
def cons():
    global s
    while True:
        x = q.get()
        if x is None: break
        s += x
lock = threading.Lock(); c = [0]
def inc():
    for i in range(50000):
        with lock: c[0] += 1
ts = [threading.Thread(target=prod), threading.Thread(target=cons), threading.Thread(target=inc), threading.Thread(target=inc)]
for t in ts: t.start()
for t in ts: t.join()
print(s, c[0])
