# gawk: word frequencies of a text, the classic awk job.
{ for (i = 1; i <= NF; i++) c[$i]++ }
END { n = 0; m = 0; for (w in c) { n++; if (c[w] > m) m = c[w] } print n, m }
