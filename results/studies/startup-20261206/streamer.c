/* companion: copy 512 MB back and forth until killed (memory traffic) */
#include <stdlib.h>
#include <string.h>
int main(void){ size_t n=256u<<20; char*a=malloc(n),*b=malloc(n); memset(a,1,n); memset(b,2,n); for(;;){ memcpy(b,a,n); memcpy(a,b,n);} }
