-- sqlite3: build a table in one transaction, index it, aggregate and join.
CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v TEXT);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 60000)
INSERT INTO t SELECT i, (i * 7919) % 1009, printf('v%06d', (i * 31) % 99991) FROM n;
CREATE INDEX tk ON t(k);
SELECT count(*), sum(k), max(v) FROM t;
SELECT k, count(*) FROM t GROUP BY k ORDER BY count(*) DESC, k LIMIT 3;
SELECT count(*) FROM t a JOIN t b ON a.k = b.k AND a.id < b.id AND b.id < a.id + 50;
