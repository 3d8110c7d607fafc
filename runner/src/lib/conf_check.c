/* lib/conf_check.c — pepsi.conf's checks after the whole file (see
 * conf_parse.h): stage references, USER_OPTIONS, connection strings and
 * secrets (issue 11). */
#include "lib/conf_parse.h"

#include "lib/conf_value.h"
#include "lib/pgpass.h"

#include <stdio.h>
#include <string.h>

#define KEY_MAX 256                 /* longer keys cannot come from inih */

static size_t key_index(const char *name)
{
    return conf_key_index(conf_key_find(CS_STAGE, name));
}

/* A NEXT or BOUNCE_STAGE naming a stage without a section. */
static void check_stage_ref(struct parser *p, size_t i, const char *key, const char *target)
{
    if (!target || conf_stage(p->c, target))
        return;
    parser_fail(p, p->stage_key_line[i][key_index(key)], "key \"%s\" in [stage-%s]: no section [stage-%s]",
         key, p->c->stages[i].name, target);
}

/* USER_OPTIONS: option names an end user may set per address; none may
 * be operator-only (issue 11). */
static void check_user_options(struct parser *p, size_t i)
{
    const struct stage_conf *s = &p->c->stages[i];
    char name[KEY_MAX];
    for (const char *at = s->user_options; at && *at;) {
        size_t n = conf_list_next(&at, name, sizeof name);
        if (n == 0)
            break;
        const char *why = n >= sizeof name || !conf_key_name_ok(name) ? "is not an option name"
                          : conf_option_operator_only(name)
                              ? "is operator-only: it runs code, names a URL, carries a credential or routes messages"
                              : NULL;
        if (why) {
            parser_fail(p, p->stage_key_line[i][key_index("USER_OPTIONS")], "key \"USER_OPTIONS\" in [stage-%s]: \"%s\" %s",
                 s->name, name, why);
            return;
        }
    }
}

void conf_check_stages(struct parser *p)
{
    for (size_t i = 0; i < p->c->n_stages && !p->failed; i++) {
        struct stage_conf *s = &p->c->stages[i];
        s->program_line = p->stage_key_line[i][key_index("PROGRAM")];
        s->queue_limit_set = p->stage_key_line[i][key_index("QUEUE_LIMIT")] != 0;
        if (!s->program) {
            parser_fail(p, s->line, "section [stage-%s]: PROGRAM is required", s->name);
            return;
        }
        bool next_first = p->stage_key_line[i][key_index("NEXT")]
                          < p->stage_key_line[i][key_index("BOUNCE_STAGE")];
        check_stage_ref(p, i, next_first ? "NEXT" : "BOUNCE_STAGE",
                        next_first ? s->next : s->bounce_stage);
        check_stage_ref(p, i, next_first ? "BOUNCE_STAGE" : "NEXT",
                        next_first ? s->bounce_stage : s->next);
        check_user_options(p, i);
    }
}

/* ---- connection strings and secrets (issue 11) ---- */

static int postgres_key_line(struct parser *p, const char *name)
{
    const struct conf_key *k = conf_key_find(CS_POSTGRES, name);
    return k ? p->key_line[conf_key_index(k)] : 0;
}

/* CONNINFO must parse; WORKER_CONNINFO must parse and hold no password, as
 * it goes into every worker's environment. */
void conf_check_postgres(struct parser *p)
{
    char why[256];
    if (conninfo_has_password(p->c->conninfo, why, sizeof why) < 0)
        parser_fail(p, postgres_key_line(p, "CONNINFO"), "key \"CONNINFO\" in [pepsi-postgres]: %s", why);
    if (p->c->worker_conninfo == NULL)
        return;
    int has = conninfo_has_password(p->c->worker_conninfo, why, sizeof why);
    int line = postgres_key_line(p, "WORKER_CONNINFO");
    if (has < 0)
        parser_fail(p, line, "key \"WORKER_CONNINFO\" in [pepsi-postgres]: %s", why);
    else if (has > 0)
        parser_fail(p, line, "key \"WORKER_CONNINFO\" in [pepsi-postgres]: holds a password (password= or "
             "sslpassword=), and this string goes into every worker's environment; leave the password "
             "out and let workers find it the way libpq does (a passfile: passfile= or PGPASSFILE; or "
             "a service: service=)");
}

/* Whether the file's own keys hold a secret: a password in CONNINFO, or
 * a key of [pepsi-ingress], [pepsi-beanstalk] or a stage section named
 * like a credential or holding a URL with a password. Says which in what
 * and where in *line. */
static bool secret_in_file(struct parser *p, int *line, char *what, size_t cap)
{
    const struct conf *c = p->c;
    const struct conf_kv *kv;
    if (conninfo_has_password(c->conninfo, NULL, 0) > 0) {
        *line = postgres_key_line(p, "CONNINFO");
        snprintf(what, cap, "key \"CONNINFO\" in [pepsi-postgres] holds a password");
        return true;
    }
    const char *sect = NULL;
    if ((kv = conf_kv_secret(c->ingress, c->n_ingress)) != NULL)
        sect = "pepsi-ingress";
    else if ((kv = conf_kv_secret(c->beanstalk, c->n_beanstalk)) != NULL)
        sect = "pepsi-beanstalk";
    for (size_t i = 0; kv == NULL && i < c->n_stages; i++)
        if ((kv = conf_kv_secret(c->stages[i].own, c->stages[i].n_own)) != NULL)
            snprintf(what, cap, "key \"%s\" in [stage-%s] holds a secret", kv->key, c->stages[i].name);
    if (kv == NULL)
        return false;
    if (sect)
        snprintf(what, cap, "key \"%s\" in [%s] holds a secret", kv->key, sect);
    *line = kv->line;
    return true;
}

/* A file holding a secret must not be open to other users (issue 11). */
void conf_check_secrets(struct parser *p)
{
    char what[256];
    int line = 0;
    if (p->failed || p->st == NULL || (p->st->st_mode & S_IRWXO) == 0)
        return;
    if (!secret_in_file(p, &line, what, sizeof what))
        return;
    parser_fail(p, line, "%s, and users other than the file's owner and group may read it (mode %04o); "
         "refusing it, as ssh and libpq do with such files: run chmod o-rwx %s",
         what, (unsigned)(p->st->st_mode & 07777), p->name);
    p->insecure = true;
}
