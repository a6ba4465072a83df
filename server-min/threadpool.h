/* threadpool.h - TFPSimpleThreadPool, as far as the pooled connection
 * handler uses it: a fixed set of workers running queued tasks. */
#ifndef SERVER_MIN_THREADPOOL_H
#define SERVER_MIN_THREADPOOL_H

struct threadpool;

typedef void (*threadpool_task_fn)(void *arg);

/* NULL with err filled on failure. */
struct threadpool *threadpool_new(int threads, char *err);

/* AddTask: 0, or -1 on out-of-memory or after shutdown. */
int threadpool_add_task(struct threadpool *p, threadpool_task_fn fn, void *arg);

/* CancelQueuedTasks: drop tasks not started; returns how many, and calls
 * cancel(arg) for each so their owners can be released. */
int threadpool_cancel_queued_tasks(struct threadpool *p,
                                   void (*cancel)(void *arg));

/* Finish running tasks, join the workers, free. */
void threadpool_free(struct threadpool *p);

#endif
