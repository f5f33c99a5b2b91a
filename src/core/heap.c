#include "core/heap.h"

#include <stdlib.h> /* defines __GLIBC__ where it is glibc */

#if defined(__SANITIZE_ADDRESS__)
#define HEAP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HEAP_ASAN 1
#endif
#endif

#if defined(HEAP_ASAN)
void __sanitizer_purge_allocator(void); /* the sanitizer's allocator replaces glibc's */
#elif defined(__GLIBC__)
#include <malloc.h>
#endif

void heap_give_back(void)
{
#if defined(HEAP_ASAN)
    __sanitizer_purge_allocator();
#elif defined(__GLIBC__)
    malloc_trim(0);
#endif
}
