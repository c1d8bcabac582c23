#include <stdio.h>
#include <stdlib.h>
int fib(int n){return n<2?n:fib(n-1)+fib(n-2);}
int main(int c,char**v){printf("fib %d\n",fib(c>1?atoi(v[1]):20));return 0;}
