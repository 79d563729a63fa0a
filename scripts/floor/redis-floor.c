// The kernel floor for client CPU per Redis GET on loopback: N connections on one thread,
// one request in flight on each, nothing but one send and one receive per operation (no
// latency recording, no parsing beyond "a reply arrived"). MODE "epoll" waits with
// epoll_wait; MODE "uring" submits each send+receive pair through io_uring (set COOP=1 or
// DEFER=1 for IORING_SETUP_COOP_TASKRUN or SINGLE_ISSUER|DEFER_TASKRUN).
// Build: apt-get install liburing-dev && mkdir -p target/peers/floor && gcc -O2 scripts/floor/redis-floor.c -o target/peers/floor/redis-floor -luring
// Run:   eval "$(scripts/services.sh env)"; target/peers/floor/redis-floor epoll "$LOADRIG_REDIS_PORT" "$LOADRIG_REDIS_PASSWORD" 50 5
// Prints ops/s and the process's own user and system CPU per operation (getrusage).
// epoll+send/recv vs io_uring batched. Usage: ping MODE PORT PASS N SECONDS
#include <liburing.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <fcntl.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static int conn(int port,const char*pass){int fd=socket(AF_INET,SOCK_STREAM,0);struct sockaddr_in a={0};a.sin_family=AF_INET;a.sin_port=htons(port);a.sin_addr.s_addr=htonl(0x7f000001);
 if(connect(fd,(void*)&a,sizeof a)){perror("connect");exit(1);}int one=1;setsockopt(fd,IPPROTO_TCP,TCP_NODELAY,&one,4);
 char b[256];int n=snprintf(b,sizeof b,"*2\r\n$4\r\nAUTH\r\n$%zu\r\n%s\r\n",strlen(pass),pass);write(fd,b,n);read(fd,b,256);return fd;}
static int mkreq(char*b){int k=rand()%100000;char key[32];int kl=sprintf(key,"key:%d",k);return sprintf(b,"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n",kl,key);}
int main(int c,char**v){const char*mode=v[1];int port=atoi(v[2]);const char*pass=v[3];int n=atoi(v[4]);double secs=atof(v[5]);
 int*fd=malloc(n*sizeof(int));char(*rb)[512]=malloc(n*512);char(*wb)[64]=malloc(n*64);
 for(int i=0;i<n;i++)fd[i]=conn(port,pass);
 long ops=0;double t0=now();struct rusage r0,r1;getrusage(RUSAGE_SELF,&r0);
 if(!strcmp(mode,"epoll")){int ep=epoll_create1(0);for(int i=0;i<n;i++){fcntl(fd[i],F_SETFL,O_NONBLOCK);struct epoll_event e={.events=EPOLLIN|EPOLLET,.data.u32=i};epoll_ctl(ep,EPOLL_CTL_ADD,fd[i],&e);int l=mkreq(wb[i]);send(fd[i],wb[i],l,0);}
  struct epoll_event ev[256];while(now()-t0<secs){int k=epoll_wait(ep,ev,256,-1);for(int j=0;j<k;j++){int i=ev[j].data.u32;int m=recv(fd[i],rb[i],512,0);if(m<=0)continue;ops++;int l=mkreq(wb[i]);send(fd[i],wb[i],l,0);}}}
 else {struct io_uring ring;struct io_uring_params p={0};p.flags=getenv("DEFER")?(IORING_SETUP_SINGLE_ISSUER|IORING_SETUP_DEFER_TASKRUN):(getenv("COOP")?IORING_SETUP_COOP_TASKRUN:0);if(io_uring_queue_init_params(512,&ring,&p)){perror("init");exit(1);};
  for(int i=0;i<n;i++){int l=mkreq(wb[i]);struct io_uring_sqe*s=io_uring_get_sqe(&ring);io_uring_prep_send(s,fd[i],wb[i],l,0);s->flags|=IOSQE_IO_LINK;io_uring_sqe_set_data64(s,(1ull<<32)|i);
   s=io_uring_get_sqe(&ring);io_uring_prep_recv(s,fd[i],rb[i],512,0);io_uring_sqe_set_data64(s,i);}
  while(now()-t0<secs){io_uring_submit_and_wait(&ring,1);struct io_uring_cqe*cq;unsigned head,cnt=0;
   io_uring_for_each_cqe(&ring,head,cq){cnt++;unsigned long long d=cq->user_data;if(d>>32)continue;int i=(int)d;ops++;int l=mkreq(wb[i]);
    struct io_uring_sqe*s=io_uring_get_sqe(&ring);io_uring_prep_send(s,fd[i],wb[i],l,0);s->flags|=IOSQE_IO_LINK;io_uring_sqe_set_data64(s,(1ull<<32)|i);
    s=io_uring_get_sqe(&ring);io_uring_prep_recv(s,fd[i],rb[i],512,0);io_uring_sqe_set_data64(s,i);}
   io_uring_cq_advance(&ring,cnt);}}
 double t=now()-t0;getrusage(RUSAGE_SELF,&r1);double u=(r1.ru_utime.tv_sec-r0.ru_utime.tv_sec)+(r1.ru_utime.tv_usec-r0.ru_utime.tv_usec)*1e-6,s=(r1.ru_stime.tv_sec-r0.ru_stime.tv_sec)+(r1.ru_stime.tv_usec-r0.ru_stime.tv_usec)*1e-6;
 printf("%s n=%d: %.0f ops/s, user %.2f sys %.2f us/op, total %.2f us/op, invol %ld vol %ld\n",mode,n,ops/t,u*1e6/ops,s*1e6/ops,(u+s)*1e6/ops,r1.ru_nivcsw-r0.ru_nivcsw,r1.ru_nvcsw-r0.ru_nvcsw);}
