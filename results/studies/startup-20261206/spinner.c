/* companion: arithmetic in registers until killed (no memory traffic) */
int main(void){ volatile double x=1; double y=1; for(;;){ for(int i=0;i<1000000;i++) y=y*1.0000001+1e-9; x=y; } }
