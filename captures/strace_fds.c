/* strace_fds.c - (group, fd) table and tid -> fd-table map; see strace_fds.h.
 * Open addressing with linear probing; entries are reset, never removed, so
 * the table holds at most one entry per distinct (group, fd) in the log. */
#include "strace_fds.h"

#include "../common/util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct table {
    struct sf_ent *e;
    size_t cap, n; /* cap: a power of two */
};

static struct table fds, tids; /* tids: group = tid, fd = the owning tid */

static size_t slot(long a, long b, size_t cap)
{
    uint64_t h = (uint64_t)a * 0x9e3779b97f4a7c15ull ^ (uint64_t)b * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
    return (size_t)h & (cap - 1);
}

static void grow(struct table *t)
{
    struct table g = {.cap = t->cap ? t->cap * 2 : 64};
    g.e = xreallocarray(NULL, g.cap, sizeof *g.e);
    for (size_t i = 0; i < g.cap; i++)
        g.e[i].group = -1; /* empty slot marker: groups are tids >= 0 */
    for (size_t i = 0; i < t->cap; i++) {
        if (t->e[i].group < 0)
            continue;
        size_t k = slot(t->e[i].group, t->e[i].fd, g.cap);
        while (g.e[k].group >= 0)
            k = (k + 1) & (g.cap - 1);
        g.e[k] = t->e[i];
        g.n++;
    }
    free(t->e);
    *t = g;
}

static struct sf_ent *lookup(struct table *t, long a, long b, int create)
{
    if (a < 0)
        a = 0; /* a log without pids: one group */
    if (t->cap && t->n * 10 < t->cap * 7) {
        size_t k = slot(a, b, t->cap);
        for (; t->e[k].group >= 0; k = (k + 1) & (t->cap - 1))
            if (t->e[k].group == a && t->e[k].fd == b)
                return &t->e[k];
        if (!create)
            return NULL;
        memset(&t->e[k], 0, sizeof t->e[k]);
        t->e[k].group = a;
        t->e[k].fd = b;
        t->n++;
        return &t->e[k];
    }
    if (!create && !t->cap)
        return NULL;
    grow(t);
    return lookup(t, a, b, create);
}

struct sf_ent *sf_get(long group, long fd, int create) { return lookup(&fds, group, fd, create); }

long sf_group(long tid)
{
    struct sf_ent *e = lookup(&tids, tid, 0, 0);
    return e ? e->conn : 0; /* no fork seen for it: the traced process */
}

void sf_clone(long parent_tid, long child_tid, int shares_files)
{
    long g = shares_files ? sf_group(parent_tid) : child_tid;
    lookup(&tids, child_tid, 0, 1)->conn = g;
}

void sf_reset(struct sf_ent *e)
{
    long g = e->group, fd = e->fd;
    free(e->members);
    memset(e, 0, sizeof *e);
    e->group = g;
    e->fd = fd;
}

void sf_epoll_ctl(long group, long epfd, long fd, int add)
{
    struct sf_ent *ep = sf_get(group, epfd, 1);
    size_t i = 0;
    while (i < ep->nmembers && ep->members[i] != fd)
        i++;
    if (!add) {
        if (i < ep->nmembers)
            ep->members[i] = ep->members[--ep->nmembers];
        return;
    }
    if (i < ep->nmembers)
        return;
    if (ep->nmembers == ep->capmembers) {
        ep->capmembers = ep->capmembers ? ep->capmembers * 2 : 8;
        ep->members = xreallocarray(ep->members, ep->capmembers, sizeof *ep->members);
    }
    ep->members[ep->nmembers++] = fd;
}

void sf_free(void)
{
    for (size_t i = 0; i < fds.cap; i++)
        if (fds.e[i].group >= 0)
            free(fds.e[i].members);
    free(fds.e);
    free(tids.e);
    memset(&fds, 0, sizeof fds);
    memset(&tids, 0, sizeof tids);
}
