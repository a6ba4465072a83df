/* probe_human.c - the human-readable output: facts only, no verdicts. */
#include "probe.h"

#include <string.h>

static void human_ms(FILE *f, bool present, double us)
{
    if (present)
        fprintf(f, "%10.3f", us / 1000.0);
    else
        fprintf(f, "%10s", "-");
}

static void human_summary(FILE *f, const char *label, const struct pst_summary *s)
{
    fprintf(f, "  %-6s n=%-4zu", label, s->n);
    if (!s->n) {
        fputs(" (no responses)\n", f);
        return;
    }
    fprintf(f, " min %.3f  p50 %.3f  p95 %.3f  p99 %.3f  max %.3f\n", s->min / 1000, s->p50 / 1000,
            s->p95 / 1000, s->p99 / 1000, s->max / 1000);
}

/* One row per request (connection, local port, status, ms, body, outcome,
 * Connection, Keep-Alive) when there are few enough to read. */
static void human_table(FILE *f, const struct run *R)
{
    fprintf(f, "  %4s %4s %6s %6s %10s %8s  %-14s %-18s %s\n", "#", "conn", "lport", "status", "ms", "body",
            "outcome", "Connection", "Keep-Alive");
    for (int i = 0; i < R->nreq; i++) {
        const struct rec *r = &R->recs[i];
        bool ok = r->oc == OC_RESPONSE;
        fprintf(f, "  %4d %4d %6d ", i + 1, r->conn_index, r->local_port);
        ok ? fprintf(f, "%6d ", r->status) : fprintf(f, "%6s ", "-");
        human_ms(f, ok, r->latency_us);
        ok ? fprintf(f, " %8lld", r->body_len) : fprintf(f, " %8s", "-");
        fprintf(f, "  %-14s %-18s %s\n", oc_name[r->oc], ok && r->connection ? r->connection : "-",
                ok && r->keep_alive ? r->keep_alive : "-");
    }
}

static void human_stats(FILE *f, const struct run *R)
{
    struct lat_stats s;
    compute_stats(R, &s);
    fputs("latency ms (nearest-rank percentiles)\n", f);
    human_summary(f, "all", &s.all);
    if (s.has_first)
        fprintf(f, "  first  %.3f\n", s.first / 1000);
    else
        fputs("  first  -\n", f);
    human_summary(f, "rest", &s.rest);
    fputs("errors:", f);
    for (int oc = OC_EOF; oc < OC_COUNT; oc++)
        fprintf(f, " %s=%d", oc_errkey[oc], R->errors[oc]);
    fputc('\n', f);
}

static void human_extras(FILE *f, const struct run *R)
{
    if (!strcmp(R->scenario, "pipeline") || !strcmp(R->scenario, "post-pipeline"))
        fprintf(f, "pipelined %d requests, written with %d send() call%s\n", R->pipelined, R->writes,
                R->writes == 1 ? "" : "s");
    if (!strcmp(R->scenario, "post-pipeline"))
        fprintf(f, "echo body == \"hello\": %s\n", R->echo_ok < 0 ? "n/a" : R->echo_ok ? "yes" : "no");
    if (!strcmp(R->scenario, "close")) {
        fprintf(f, "announced close: %s; server closed before reuse: %s", R->announced_close ? "yes" : "no",
                R->server_closed ? "yes" : "no");
        if (R->closed_after_response_ms >= 0)
            fprintf(f, " (%.3f ms after the response)", R->closed_after_response_ms);
        fprintf(f, "; unannounced close: %s\nreuse attempt saw: %s\n", R->unannounced_close ? "yes" : "no",
                R->reuse_outcome ? R->reuse_outcome : "-");
    }
    if (!strcmp(R->scenario, "pool"))
        fprintf(f, "stale failures %d, reconnects %d, retired (Connection: close) %d, retired (Keep-Alive timeout) %d\n",
                R->stale_failures, R->reconnects, R->retired_announced, R->retired_keepalive_timeout);
}

void human_run(FILE *f, const struct run *R, const struct opts *o, const char *title)
{
    fprintf(f, "== %s  %s:%d  path %s\n", title, o->host, o->port, o->path);
    fprintf(f, "requests sent %d, responses %d, connects %d, reused %s, local ports", R->requests_sent,
            R->responses, R->connects, run_reused(R) ? "yes" : "no");
    for (int i = 0; i < R->nports && i < 12; i++)
        fprintf(f, " %d", R->ports[i]);
    fputs(R->nports > 12 ? " ...\n" : "\n", f);
    if (R->nreq <= 40)
        human_table(f, R);
    human_stats(f, R);
    if (R->server_closed)
        fprintf(f, "server closed: yes (%s, %.3f ms after the last send before it)\n",
                R->close_kind ? R->close_kind : "?", R->server_closed_after_ms);
    else
        fputs("server closed: not observed\n", f);
    if (R->unexpected_bytes)
        fprintf(f, "unexpected bytes after responses: %lld\n", R->unexpected_bytes);
    human_extras(f, R);
}

void human_compare(FILE *f, const struct run *A, const struct run *B, const struct opts *o)
{
    struct lat_stats sa, sb;
    compute_stats(A, &sa);
    compute_stats(B, &sb);
    human_run(f, A, o, "compare (a) keep-alive, one socket");
    fputc('\n', f);
    human_run(f, B, o, "compare (b) fresh socket per request, Connection: close");
    if (sa.rest.n > 0 && sb.all.n > 0 && sb.all.p50 > 0)
        fprintf(f, "\nratio_p50 = p50(a, requests 2..n) / p50(b) = %.3f / %.3f = %.3f\n", sa.rest.p50 / 1000,
                sb.all.p50 / 1000, sa.rest.p50 / sb.all.p50);
    else
        fprintf(f, "\nratio_p50 = n/a (missing responses)\n");
}
