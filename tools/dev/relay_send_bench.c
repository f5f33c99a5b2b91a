/* Development machine (not CI): what one relay message costs the sender on TCP loopback, with
 * the reader spinning as a GPU rank's follower does (recv MSG_PEEK), sent as two send() calls
 * (header, body) or one sendmsg(); the reader answers each message with a byte and the sender
 * waits 1 ms (a step) between messages. Build and run:
 *   gcc -O2 -o /tmp/relay_send tools/dev/relay_send_bench.c && /tmp/relay_send MODE SPIN BYTES
 * MODE 0: two sends, 1: one sendmsg; SPIN 1: the reader spins; BYTES: the body. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  int mode=atoi(argv[1]); /* 0: two sends, 1: one sendmsg */
  int spin=atoi(argv[2]);
  int ls=socket(AF_INET,SOCK_STREAM,0);int one=1;setsockopt(ls,SOL_SOCKET,SO_REUSEADDR,&one,4);
  struct sockaddr_in a={.sin_family=AF_INET,.sin_port=0,.sin_addr.s_addr=htonl(INADDR_LOOPBACK)};
  bind(ls,(void*)&a,sizeof a);listen(ls,1);socklen_t l=sizeof a;getsockname(ls,(void*)&a,&l);
  pid_t p=fork();
  if(p==0){int s=socket(AF_INET,SOCK_STREAM,0);connect(s,(void*)&a,sizeof a);setsockopt(s,IPPROTO_TCP,TCP_NODELAY,&one,4);
    static char buf[1<<20];long got=0;
    for(;;){ if(spin){char c;while(recv(s,&c,1,MSG_PEEK|MSG_DONTWAIT)<0&&errno==EAGAIN);} 
      ssize_t k=recv(s,buf,16,MSG_WAITALL); if(k<=0)break; unsigned n; memcpy(&n,buf+12,4); if(n) recv(s,buf,n,MSG_WAITALL); got++;
      /* reply so the sender paces like a step */
      char r=1; send(s,&r,1,0);}
    return 0;}
  int c=accept(ls,0,0);setsockopt(c,IPPROTO_TCP,TCP_NODELAY,&one,4);
  char hdr[16]={0};unsigned n=(unsigned)atoi(argv[3]);memcpy(hdr+12,&n,4);static char body[1<<20];
  double tot=0;int N=5000;
  for(int i=0;i<N;i++){
    double t0=now();
    if(mode==0){send(c,hdr,16,MSG_NOSIGNAL);send(c,body,n,MSG_NOSIGNAL);}
    else{struct iovec v[2]={{hdr,16},{body,n}};struct msghdr m={.msg_iov=v,.msg_iovlen=2};sendmsg(c,&m,MSG_NOSIGNAL);}
    tot+=now()-t0;
    char r; recv(c,&r,1,0);
    double t1=now(); while(now()-t1<1e-3); /* a 1 ms step */
  }
  printf("mode %d spin %d: send %.2f us a message\n",mode,spin,tot/N*1e6);
  close(c);wait(0);return 0;}
