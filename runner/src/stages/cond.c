/* stages/cond.c — see cond.h. A recursive-descent parser into a small tree. */
#include "stages/cond.h"

#include "util.h"

#include <ctype.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum node_kind { N_OR, N_AND, N_NOT, N_TEST };
enum field_kind { F_SENDER_KEY, F_TUBE, F_SUBJECT, F_HEADER_FROM, F_ENVELOPE_SENDER, F_RECIPIENT,
                  F_RECIPIENTS, F_STATE };
enum op { OP_EQ, OP_NE, OP_MATCH, OP_NOMATCH, OP_LT, OP_LE, OP_GT, OP_GE, OP_EXISTS };

struct cond {
    enum node_kind kind;
    struct cond *a, *b;         /* N_OR, N_AND: both; N_NOT: a */
    enum field_kind field;
    char **path;                /* F_STATE: the keys */
    size_t n_path;
    enum op op;
    char *text;                 /* the value as text */
    double num;                 /* the value as a number */
    bool is_num;
    bool has_re;
    regex_t re;
};

struct parser {
    const char *s;
    size_t pos;
    char *err;
    size_t errlen;
    bool failed;
};

static void fail(struct parser *p, const char *what)
{
    if (!p->failed)
        snprintf(p->err, p->errlen, "condition, at character %zu: %s", p->pos + 1, what);
    p->failed = true;
}

static void skip_space(struct parser *p)
{
    while (isspace((unsigned char)p->s[p->pos]))
        p->pos++;
}

/* Whether the next token is the word w (followed by a non-word character). */
static bool accept_word(struct parser *p, const char *w)
{
    skip_space(p);
    size_t n = strlen(w);
    if (strncmp(p->s + p->pos, w, n) != 0)
        return false;
    char c = p->s[p->pos + n];
    if (isalnum((unsigned char)c) || c == '_' || c == '.')
        return false;
    p->pos += n;
    return true;
}

static bool accept_char(struct parser *p, char c)
{
    skip_space(p);
    if (p->s[p->pos] != c)
        return false;
    p->pos++;
    return true;
}

static struct cond *node(enum node_kind k)
{
    struct cond *c = xcalloc(1, sizeof *c);
    c->kind = k;
    return c;
}

static struct cond *parse_expr(struct parser *p);

static char *read_identifier(struct parser *p)
{
    skip_space(p);
    size_t start = p->pos;
    while (isalnum((unsigned char)p->s[p->pos]) || p->s[p->pos] == '_' || p->s[p->pos] == '.' ||
           p->s[p->pos] == '-')
        p->pos++;
    if (p->pos == start)
        return NULL;
    char *id = xmalloc(p->pos - start + 1);
    memcpy(id, p->s + start, p->pos - start);
    id[p->pos - start] = '\0';
    return id;
}

static const struct {
    const char *name;
    enum field_kind kind;
} fields[] = {
    {"sender_key", F_SENDER_KEY},   {"tube", F_TUBE},       {"subject", F_SUBJECT},
    {"header_from", F_HEADER_FROM}, {"envelope_sender", F_ENVELOPE_SENDER},
    {"recipient", F_RECIPIENT},     {"recipients", F_RECIPIENTS},
};

/* state.a.b: the keys, split at dots. */
static int parse_path(struct cond *c, const char *keys)
{
    char *copy = xstrdup(keys), *save = NULL;
    for (char *k = strtok_r(copy, ".", &save); k; k = strtok_r(NULL, ".", &save)) {
        c->path = xrealloc(c->path, (c->n_path + 1) * sizeof *c->path);
        c->path[c->n_path++] = xstrdup(k);
    }
    free(copy);
    return c->n_path ? 0 : -1;
}

static int parse_field(struct parser *p, struct cond *c)
{
    char *id = read_identifier(p);
    if (id == NULL) {
        fail(p, "expected a field (sender_key, tube, subject, header_from, envelope_sender, "
                "recipient, recipients or state.KEY)");
        return -1;
    }
    int rc = -1;
    if (strncmp(id, "state.", 6) == 0) {
        c->field = F_STATE;
        rc = parse_path(c, id + 6);
    } else {
        for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
            if (strcmp(id, fields[i].name) == 0) {
                c->field = fields[i].kind;
                rc = 0;
            }
    }
    if (rc != 0) {
        char what[200];
        snprintf(what, sizeof what, "unknown field \"%.100s\"", id);
        fail(p, what);
    }
    free(id);
    return rc;
}

static int parse_op(struct parser *p, struct cond *c)
{
    static const struct {
        const char *text;
        enum op op;
    } ops[] = {{"==", OP_EQ}, {"!=", OP_NE}, {"!~", OP_NOMATCH}, {"~", OP_MATCH},
               {"<=", OP_LE}, {">=", OP_GE}, {"<", OP_LT},       {">", OP_GT}};
    skip_space(p);
    if (accept_word(p, "exists")) {
        c->op = OP_EXISTS;
        return 0;
    }
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        size_t n = strlen(ops[i].text);
        if (strncmp(p->s + p->pos, ops[i].text, n) == 0) {
            p->pos += n;
            c->op = ops[i].op;
            return 0;
        }
    }
    fail(p, "expected ==, !=, ~, !~, <, <=, >, >= or exists");
    return -1;
}

static int parse_string(struct parser *p, struct cond *c)
{
    size_t cap = strlen(p->s + p->pos) + 1, n = 0;
    char *out = xmalloc(cap);
    p->pos++; /* the opening quote */
    for (;;) {
        char ch = p->s[p->pos];
        if (ch == '\0') {
            free(out);
            fail(p, "unterminated string");
            return -1;
        }
        p->pos++;
        if (ch == '"')
            break;
        if (ch == '\\' && (p->s[p->pos] == '"' || p->s[p->pos] == '\\'))
            ch = p->s[p->pos++];
        out[n++] = ch;
    }
    out[n] = '\0';
    c->text = out;
    return 0;
}

static int parse_value(struct parser *p, struct cond *c)
{
    skip_space(p);
    if (p->s[p->pos] == '"')
        return parse_string(p, c);
    char *end;
    c->num = strtod(p->s + p->pos, &end);
    if (end == p->s + p->pos) {
        fail(p, "expected a \"string\" or a number");
        return -1;
    }
    c->text = xmalloc((size_t)(end - (p->s + p->pos)) + 1);
    memcpy(c->text, p->s + p->pos, (size_t)(end - (p->s + p->pos)));
    c->text[end - (p->s + p->pos)] = '\0';
    c->is_num = true;
    p->pos = (size_t)(end - p->s);
    return 0;
}

static int compile_regex(struct parser *p, struct cond *c)
{
    int rc = regcomp(&c->re, c->text, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        char why[160], what[300];
        regerror(rc, &c->re, why, sizeof why);
        snprintf(what, sizeof what, "bad regular expression \"%.80s\": %s", c->text, why);
        fail(p, what);
        return -1;
    }
    c->has_re = true;
    return 0;
}

static struct cond *parse_test(struct parser *p)
{
    struct cond *c = node(N_TEST);
    if (parse_field(p, c) != 0 || parse_op(p, c) != 0)
        return c;
    if (c->op == OP_EXISTS) {
        if (c->field != F_STATE)
            fail(p, "\"exists\" tests state fields only");
        return c;
    }
    if (parse_value(p, c) != 0)
        return c;
    if ((c->op == OP_MATCH || c->op == OP_NOMATCH) && compile_regex(p, c) != 0)
        return c;
    if (c->op >= OP_LT && c->op <= OP_GE && !c->is_num)
        fail(p, "<, <=, > and >= compare numbers");
    return c;
}

static struct cond *parse_factor(struct parser *p)
{
    if (accept_word(p, "not")) {
        struct cond *c = node(N_NOT);
        c->a = parse_factor(p);
        return c;
    }
    if (accept_char(p, '(')) {
        struct cond *c = parse_expr(p);
        if (!accept_char(p, ')'))
            fail(p, "expected \")\"");
        return c;
    }
    return parse_test(p);
}

static struct cond *parse_binary(struct parser *p, const char *word, enum node_kind kind,
                                 struct cond *(*sub)(struct parser *))
{
    struct cond *left = sub(p);
    while (!p->failed && accept_word(p, word)) {
        struct cond *c = node(kind);
        c->a = left;
        c->b = sub(p);
        left = c;
    }
    return left;
}

static struct cond *parse_term(struct parser *p)
{
    return parse_binary(p, "and", N_AND, parse_factor);
}

static struct cond *parse_expr(struct parser *p)
{
    return parse_binary(p, "or", N_OR, parse_term);
}

struct cond *cond_compile(const char *text, char *err, size_t errlen)
{
    struct parser p = {text ? text : "", 0, err, errlen, false};
    struct cond *c = parse_expr(&p);
    skip_space(&p);
    if (!p.failed && p.s[p.pos] != '\0')
        fail(&p, "unexpected text after the condition");
    if (p.failed) {
        cond_free(c);
        return NULL;
    }
    /* The tree owns copies of everything it needs; nothing points into p. */
    // cppcheck-suppress returnDanglingLifetime
    return c;
}

void cond_free(struct cond *c)
{
    if (c == NULL)
        return;
    cond_free(c->a);
    cond_free(c->b);
    for (size_t i = 0; i < c->n_path; i++)
        free(c->path[i]);
    free(c->path);
    free(c->text);
    if (c->has_re)
        regfree(&c->re);
    free(c);
}

/* ---- evaluation ---- */

static bool compare_text(const struct cond *c, const char *v)
{
    switch (c->op) {
    case OP_EQ:
        return strcmp(v, c->text) == 0;
    case OP_NE:
        return strcmp(v, c->text) != 0;
    case OP_MATCH:
        return regexec(&c->re, v, 0, NULL, 0) == 0;
    case OP_NOMATCH:
        return regexec(&c->re, v, 0, NULL, 0) != 0;
    default: {
        char *end;
        double d = strtod(v, &end);
        if (end == v || *end != '\0')
            return false;
        return c->op == OP_LT ? d < c->num : c->op == OP_LE ? d <= c->num : c->op == OP_GT ? d > c->num
                                                                                             : d >= c->num;
    }
    }
}

static bool test_state(const struct cond *c, const struct pepsi_message *m)
{
    json_t *v = m->state;
    for (size_t i = 0; v && i < c->n_path; i++)
        v = json_is_object(v) ? json_object_get(v, c->path[i]) : NULL;
    if (c->op == OP_EXISTS)
        return v != NULL;
    if (v == NULL)
        return compare_text(c, "");
    if (json_is_string(v))
        return compare_text(c, json_string_value(v));
    char buf[64];
    if (json_is_number(v)) {
        snprintf(buf, sizeof buf, "%.17g", json_number_value(v));
        return compare_text(c, buf);
    }
    char *dump = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    bool r = compare_text(c, dump ? dump : "");
    free(dump);
    return r;
}

static bool test_eval(const struct cond *c, const struct pepsi_message *m)
{
    char count[32];
    switch (c->field) {
    case F_SENDER_KEY:
        return compare_text(c, m->sender_key ? m->sender_key : "");
    case F_TUBE:
        return compare_text(c, m->tube ? m->tube : "");
    case F_SUBJECT:
        return compare_text(c, m->subject ? m->subject : "");
    case F_HEADER_FROM:
        return compare_text(c, m->header_from ? m->header_from : "");
    case F_ENVELOPE_SENDER:
        return compare_text(c, m->envelope_sender ? m->envelope_sender : "");
    case F_RECIPIENT:
        for (size_t i = 0; i < m->n_recipients; i++)
            if (compare_text(c, m->recipients[i]))
                return true;
        return false;
    case F_RECIPIENTS:
        snprintf(count, sizeof count, "%zu", m->n_recipients);
        return compare_text(c, count);
    default:
        return test_state(c, m);
    }
}

bool cond_eval(const struct cond *c, const struct pepsi_message *m)
{
    switch (c->kind) {
    case N_OR:
        return cond_eval(c->a, m) || cond_eval(c->b, m);
    case N_AND:
        return cond_eval(c->a, m) && cond_eval(c->b, m);
    case N_NOT:
        return !cond_eval(c->a, m);
    default:
        return test_eval(c, m);
    }
}
