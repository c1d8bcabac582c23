int f(int x){return x*x+1;}
