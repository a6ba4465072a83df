/* probe_async.h - one request/response exchange on a non-blocking socket,
 * advanced by a caller's poll() loop, so one thread can drive hundreds of
 * connections (load, fdscale).  Bodies are streamed and counted, as in
 * probe_conn.c; buf only ever holds a head plus one recv. */
#ifndef PROBE_ASYNC_H
#define PROBE_ASYNC_H

#include "probe.h"

enum ax_state { AX_IDLE, AX_SEND, AX_HEAD, AX_BODY, AX_DONE };

struct ax {
    int fd, index, port;
    enum ax_state state;
    const char *req;
    size_t rlen, sent;
    char *buf;
    size_t len, cap, last; /* last: hr_parse_head's scan hint */
    struct hr_body body;
    enum outcome oc; /* when AX_DONE */
    int status;
    int64_t t_sent, t_done;
};

/* Begin writing req (kept by pointer) on a->fd. */
void ax_start(struct ax *a, const char *req, size_t rlen);

/* poll() events the exchange waits for (0 when idle or done). */
short ax_events(const struct ax *a);

/* Move as far as possible without blocking; sets AX_DONE and a->oc when the
 * response is complete or the connection failed. */
void ax_step(struct ax *a, const struct opts *o);

void ax_free(struct ax *a); /* closes the fd, frees the buffer */

#endif
