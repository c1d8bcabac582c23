import http.server, threading, urllib.request, socketserver, json, hashlib, subprocess, os, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = json.dumps({"path": self.path}).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
s = socketserver.TCPServer(("127.0.0.1", 0), H)
t = threading.Thread(target=s.serve_forever, daemon=True); t.start()
port = s.server_address[1]
print(urllib.request.urlopen(f"http://127.0.0.1:{port}/hello").read().decode())
print(subprocess.run(["echo", "sub"], capture_output=True, text=True).stdout.strip())
print(hashlib.sha256(open("text","rb").read()).hexdigest())
import sqlite3, zlib, re, decimal, fractions, datetime
c = sqlite3.connect(":memory:"); c.execute("create table t(x)"); c.executemany("insert into t values(?)", [(i,) for i in range(1000)])
print(c.execute("select sum(x) from t").fetchone())
print(len(zlib.compress(open("text","rb").read())))
print(decimal.Decimal(1)/decimal.Decimal(7), fractions.Fraction(3, 9))
from concurrent.futures import ThreadPoolExecutor
with ThreadPoolExecutor(4) as ex: print(sum(ex.map(lambda x: x*x, range(1000))))
import multiprocessing as mp
with mp.Pool(2) as pool: print(sum(pool.map(abs, range(-100, 100))))
s.shutdown()
