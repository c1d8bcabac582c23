#include <stdio.h>
int f(int);
int main(){printf("%d\n",f(10));return 0;}
