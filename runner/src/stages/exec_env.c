/* stages/exec_env.c — see exec_env.h. */
#include "stages/exec_env.h"

#include "lib/util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* What exec_env_build sets; a command never inherits these from above. */
static const char *const message_vars[] = {
    "PEPSI_MESSAGE_ID", "PEPSI_TUBE",  "PEPSI_SENDER_KEY", "PEPSI_ENVELOPE_SENDER",
    "PEPSI_HEADER_FROM", "PEPSI_SUBJECT", "PEPSI_RECIPIENTS", "PEPSI_STATE",
    "PEPSI_MESSAGE_FD", "PEPSI_TRUNCATED", NULL,
};

/* Where a connection is found besides libpq's own PG* variables
 * (PQconndefaults names those). */
static const char *const conn_vars[] = {
    "PEPSI_CONNINFO", "PEPSI_CONFIG", "PGPASSFILE", "PGSERVICE", "PGSERVICEFILE", "PGSYSCONFDIR", NULL,
};

/* ---- names ---- */

struct names {
    char **v;
    size_t n, cap;
};

static void names_add(struct names *ns, const char *name)
{
    for (size_t i = 0; i < ns->n; i++)
        if (strcmp(ns->v[i], name) == 0)
            return;
    if (ns->n + 2 > ns->cap) {
        ns->cap = ns->cap ? ns->cap * 2 : 64;
        ns->v = xrealloc(ns->v, ns->cap * sizeof *ns->v);
    }
    ns->v[ns->n++] = xstrdup(name);
    ns->v[ns->n] = NULL;
}

char **exec_env_strip_names(bool pass_conninfo)
{
    struct names ns = {NULL, 0, 0};
    for (size_t i = 0; message_vars[i]; i++)
        names_add(&ns, message_vars[i]);
    names_add(&ns, "PGPASSWORD");
    if (!pass_conninfo) {
        for (size_t i = 0; conn_vars[i]; i++)
            names_add(&ns, conn_vars[i]);
        PQconninfoOption *defs = PQconndefaults();
        for (PQconninfoOption *o = defs; o && o->keyword; o++)
            if (o->envvar)
                names_add(&ns, o->envvar);
        PQconninfoFree(defs);
    }
    return ns.v;
}

void exec_env_names_free(char **names)
{
    for (size_t i = 0; names && names[i]; i++)
        free(names[i]);
    free(names);
}

/* ---- the environment ---- */

static bool named(const char *var, char *const *names)
{
    const char *eq = strchr(var, '=');
    size_t len = eq ? (size_t)(eq - var) : strlen(var);
    for (size_t i = 0; names && names[i]; i++)
        if (strlen(names[i]) == len && memcmp(names[i], var, len) == 0)
            return true;
    return false;
}

static void env_add(struct exec_env *e, size_t *cap, char *var)
{
    if (e->n + 2 > *cap) {
        *cap = *cap ? *cap * 2 : 64;
        e->vars = xrealloc(e->vars, *cap * sizeof *e->vars);
    }
    e->vars[e->n++] = var;
    e->vars[e->n] = NULL;
    e->bytes += strlen(var) + 1;
}

/* The message variables being added, against their bounds. */
struct offer {
    struct exec_env *e;
    size_t *cap;
    char left_out[256];         /* "PEPSI_RECIPIENTS,PEPSI_STATE" */
};

/* Whether NAME with a value of len bytes fits; when not, it is named in
 * PEPSI_TRUNCATED. */
static bool fits(struct offer *o, const char *name, size_t len)
{
    size_t var = strlen(name) + 1 + len + 1;
    if (len <= EXEC_ENV_VALUE_MAX && o->e->message_bytes + var <= EXEC_ENV_TOTAL_MAX)
        return true;
    size_t at = strlen(o->left_out);
    snprintf(o->left_out + at, sizeof o->left_out - at, "%s%s", at ? "," : "", name);
    return false;
}

static void put(struct offer *o, const char *name, const char *value)
{
    char *var = xasprintf("%s=%s", name, value);
    o->e->message_bytes += strlen(var) + 1;
    env_add(o->e, o->cap, var);
}

static void offer_string(struct offer *o, const char *name, const char *value)
{
    if (value && fits(o, name, strlen(value)))
        put(o, name, value);
}

/* PEPSI_RECIPIENTS: space-separated, measured before it is built. */
static void offer_recipients(struct offer *o, const struct pepsi_message *m)
{
    size_t len = 0;
    for (size_t i = 0; i < m->n_recipients; i++)
        len += strlen(m->recipients[i]) + (i ? 1 : 0);
    if (!fits(o, "PEPSI_RECIPIENTS", len))
        return;
    char *joined = xmalloc(len + 1), *p = joined;
    for (size_t i = 0; i < m->n_recipients; i++) {
        if (i)
            *p++ = ' ';
        size_t n = strlen(m->recipients[i]);
        memcpy(p, m->recipients[i], n);
        p += n;
    }
    *p = '\0';
    put(o, "PEPSI_RECIPIENTS", joined);
    free(joined);
}

/* PEPSI_STATE: compact JSON, measured before it is written. */
static void offer_state(struct offer *o, const struct pepsi_message *m)
{
    size_t len = m->state ? json_dumpb(m->state, NULL, 0, JSON_COMPACT) : 2;
    if (len == 0 || !fits(o, "PEPSI_STATE", len))
        return;
    char *state = m->state ? json_dumps(m->state, JSON_COMPACT) : NULL;
    put(o, "PEPSI_STATE", state ? state : "{}");
    free(state);
}

void exec_env_build(struct exec_env *e, char *const *inherited, char *const *strip,
                    const struct pepsi_message *m)
{
    size_t cap = 0;
    memset(e, 0, sizeof *e);
    for (size_t i = 0; inherited && inherited[i]; i++)
        if (!named(inherited[i], strip))
            env_add(e, &cap, xstrdup(inherited[i]));
    struct offer o = {e, &cap, ""};
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)m->id);
    /* Small first: a large subject or state never crowds out the id. */
    offer_string(&o, "PEPSI_MESSAGE_ID", num);
    offer_string(&o, "PEPSI_TUBE", m->tube);
    offer_string(&o, "PEPSI_SENDER_KEY", m->sender_key);
    offer_string(&o, "PEPSI_ENVELOPE_SENDER", m->envelope_sender);
    offer_string(&o, "PEPSI_HEADER_FROM", m->header_from ? m->header_from : "");
    offer_string(&o, "PEPSI_SUBJECT", m->subject ? m->subject : "");
    offer_recipients(&o, m);
    offer_state(&o, m);
    env_add(e, &cap, xasprintf("PEPSI_MESSAGE_FD=%d", EXEC_MESSAGE_FD));
    if (o.left_out[0])
        env_add(e, &cap, xasprintf("PEPSI_TRUNCATED=%s", o.left_out));
}

void exec_env_free(struct exec_env *e)
{
    for (size_t i = 0; i < e->n; i++)
        free(e->vars[i]);
    free(e->vars);
    memset(e, 0, sizeof *e);
}

const char *exec_env_get(const struct exec_env *e, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < e->n; i++)
        if (strncmp(e->vars[i], name, len) == 0 && e->vars[i][len] == '=')
            return e->vars[i] + len + 1;
    return NULL;
}

/* ---- the metadata descriptor ---- */

static json_t *metadata(const struct pepsi_message *m, const char *stage)
{
    json_t *rcpt = json_array();
    for (size_t i = 0; rcpt && i < m->n_recipients; i++) {
        json_t *s = json_string(m->recipients[i]);
        if (s == NULL || json_array_append_new(rcpt, s) != 0) {
            json_decref(rcpt);
            return NULL;
        }
    }
    if (rcpt == NULL)
        return NULL;
    json_t *state = m->state ? json_incref(m->state) : json_object();
    /* "o" takes the references, also on error. */
    return json_pack("{s:I, s:s, s:s?, s:s?, s:s?, s:o, s:s?, s:s?, s:o, s:s?}", "id", (json_int_t)m->id,
                     "stage", stage, "tube", m->tube, "sender_key", m->sender_key, "envelope_sender",
                     m->envelope_sender, "recipients", rcpt, "subject", m->subject, "header_from",
                     m->header_from, "state", state, "arrived_at", m->arrived_at);
}

int exec_message_fd(const struct pepsi_message *m, const char *stage, char *why, size_t cap)
{
    json_t *o = metadata(m, stage);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (text == NULL) {
        snprintf(why, cap, "the message's metadata cannot be written as JSON (not UTF-8)");
        return -2;
    }
    int fd = memfd_create("pepsi-message", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || util_write_all(fd, text, strlen(text)) != 0 || lseek(fd, 0, SEEK_SET) != 0) {
        int e = errno;
        snprintf(why, cap, "cannot write the message's metadata to a memfd: %s", strerror(e));
        if (fd >= 0)
            close(fd);
        free(text);
        errno = e;
        return -1;
    }
    free(text);
    /* Read-only from now on, for the command and anything it starts. */
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
        int e = errno;
        snprintf(why, cap, "cannot seal the message's metadata: %s", strerror(e));
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}
