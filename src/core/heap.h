/* Gives the allocator's free memory back to the system. glibc keeps what a
 * thread frees in that thread's arena (a server's connection threads each
 * take one) and returns only the top of each heap; a long-running server that
 * allocates and frees in many threads holds more and more free pages. */
#ifndef INFER_CORE_HEAP_H
#define INFER_CORE_HEAP_H

/* Releases every whole free page of every arena (malloc_trim); a no-op
 * where the C library has no such call. Takes each arena's lock briefly. */
void heap_give_back(void);

#endif
