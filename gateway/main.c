#include <stdio.h>
int main(void) { puts("sluice " SLUICE_VERSION); return 0; }
