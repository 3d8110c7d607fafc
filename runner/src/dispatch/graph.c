/* dispatch/graph.c — see graph.h. Tarjan's strongly connected components, without
 * recursion (a file may hold thousands of stages), in O(stages + edges). */
#include "dispatch/graph.h"

#include "lib/log.h"
#include "lib/util.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_EDGES 3           /* THEN, ELSE or NEXT, BOUNCE_STAGE */
#define UNSEEN SIZE_MAX
#define NAMES_SHOWN 16        /* stages named in one warning */

struct node {
    size_t edge[MAX_EDGES];
    size_t n_edge;
    bool exits;               /* can finish a message, or sends it to a stage without a section */
};

/* The built-in behind a PROGRAM ("if" for .../pepsi-stage-if), or "". */
static const char *builtin_name(const char *program)
{
    const char *base = strrchr(program, '/');
    base = base ? base + 1 : program;
    return strncmp(base, "pepsi-stage-", 12) == 0 ? base + 12 : "";
}

static size_t stage_index(const struct conf *c, const char *name)
{
    for (size_t i = 0; i < c->n_stages; i++)
        if (strcmp(c->stages[i].name, name) == 0)
            return i;
    return UNSEEN;
}

/* An edge to the stage called name; one to no section is a way out. */
static void add_edge(const struct conf *c, struct node *n, const char *name)
{
    if (name == NULL)
        return;
    size_t to = stage_index(c, name);
    if (to == UNSEEN)
        n->exits = true;
    else if (n->n_edge < MAX_EDGES)
        n->edge[n->n_edge++] = to;
}

static void build_node(const struct conf *c, const struct stage_conf *s, struct node *n)
{
    const char *builtin = builtin_name(s->program ? s->program : "");
    if (strcmp(builtin, "discard") == 0) {
        n->exits = true;          /* it finishes every message */
    } else if (strcmp(builtin, "if") == 0) {
        const char *then = conf_stage_own(s, "THEN"), *otherwise = conf_stage_own(s, "ELSE");
        if (then == NULL)
            n->exits = true;      /* the worker refuses to start: nothing moves */
        add_edge(c, n, then);
        add_edge(c, n, otherwise ? otherwise : s->next);
        if (otherwise == NULL && s->next == NULL)
            n->exits = true;      /* a false condition finishes the message */
    } else {
        add_edge(c, n, s->next);
        if (s->next == NULL)
            n->exits = true;
    }
    add_edge(c, n, s->bounce_stage);
}

/* Tarjan's walk, with its own stack of frames instead of recursion. */
struct walk {
    const struct node *nodes;
    size_t n;
    size_t *index, *low, *comp;   /* comp: component number once assigned, else UNSEEN */
    bool *on_stack;
    size_t *stack, depth;         /* Tarjan's stack of visited nodes */
    size_t *frame, *next_edge, frames;
    size_t counter, n_comps;
    struct graph_trap *traps;
    size_t n_traps;
};

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_trap(const void *a, const void *b)
{
    return cmp_size(&((const struct graph_trap *)a)->stages[0], &((const struct graph_trap *)b)->stages[0]);
}

/* The component just completed is stack[from..depth): keep it when it is
 * a trap. */
static void component_done(struct walk *w, size_t from)
{
    size_t k = w->n_comps++, size = w->depth - from;
    bool cycle = size > 1, closed = true;
    for (size_t i = from; i < w->depth; i++)
        w->comp[w->stack[i]] = k;
    for (size_t i = from; i < w->depth && closed; i++) {
        const struct node *nd = &w->nodes[w->stack[i]];
        closed = !nd->exits;
        for (size_t e = 0; e < nd->n_edge && closed; e++) {
            closed = w->comp[nd->edge[e]] == k;
            cycle = cycle || nd->edge[e] == w->stack[i];
        }
    }
    if (cycle && closed) {
        struct graph_trap *t = &w->traps[w->n_traps++];
        t->n = size;
        t->stages = xcalloc(size, sizeof *t->stages);
        memcpy(t->stages, &w->stack[from], size * sizeof *t->stages);
        qsort(t->stages, size, sizeof *t->stages, cmp_size);
    }
    for (size_t i = from; i < w->depth; i++)
        w->on_stack[w->stack[i]] = false;
    w->depth = from;
}

static void visit(struct walk *w, size_t v)
{
    w->index[v] = w->low[v] = w->counter++;
    w->stack[w->depth++] = v;
    w->on_stack[v] = true;
    w->frame[w->frames] = v;
    w->next_edge[w->frames++] = 0;
}

static void strongconnect(struct walk *w, size_t root)
{
    visit(w, root);
    while (w->frames > 0) {
        size_t f = w->frames - 1, v = w->frame[f];
        const struct node *nd = &w->nodes[v];
        if (w->next_edge[f] < nd->n_edge) {
            size_t to = nd->edge[w->next_edge[f]++];
            if (w->index[to] == UNSEEN)
                visit(w, to);
            else if (w->on_stack[to] && w->index[to] < w->low[v])
                w->low[v] = w->index[to];
            continue;
        }
        w->frames--;
        if (w->frames > 0) {
            size_t parent = w->frame[w->frames - 1];
            if (w->low[v] < w->low[parent])
                w->low[parent] = w->low[v];
        }
        if (w->low[v] == w->index[v]) {
            size_t from = w->depth;
            while (w->stack[--from] != v)
                ;
            component_done(w, from);
        }
    }
}

size_t graph_traps(const struct conf *c, struct graph_trap **out)
{
    *out = NULL;
    if (c == NULL || c->n_stages == 0)
        return 0;
    size_t n = c->n_stages;
    struct node *nodes = xcalloc(n, sizeof *nodes);
    for (size_t i = 0; i < n; i++)
        build_node(c, &c->stages[i], &nodes[i]);
    struct walk w = {
        .nodes = nodes, .n = n,
        .index = xcalloc(n, sizeof(size_t)), .low = xcalloc(n, sizeof(size_t)),
        .comp = xcalloc(n, sizeof(size_t)), .on_stack = xcalloc(n, sizeof(bool)),
        .stack = xcalloc(n, sizeof(size_t)), .frame = xcalloc(n, sizeof(size_t)),
        .next_edge = xcalloc(n, sizeof(size_t)), .traps = xcalloc(n, sizeof(struct graph_trap)),
    };
    for (size_t i = 0; i < n; i++)
        w.index[i] = w.comp[i] = UNSEEN;
    for (size_t i = 0; i < n; i++)
        if (w.index[i] == UNSEEN)
            strongconnect(&w, i);
    free(nodes);
    free(w.index);
    free(w.low);
    free(w.comp);
    free(w.on_stack);
    free(w.stack);
    free(w.frame);
    free(w.next_edge);
    if (w.n_traps == 0) {
        free(w.traps);
        return 0;
    }
    qsort(w.traps, w.n_traps, sizeof *w.traps, cmp_trap);
    *out = w.traps;
    return w.n_traps;
}

void graph_traps_free(struct graph_trap *traps, size_t n)
{
    for (size_t i = 0; traps && i < n; i++)
        free(traps[i].stages);
    free(traps);
}

const char *graph_trap_names(const struct conf *c, const struct graph_trap *t, char *buf, size_t cap)
{
    size_t len = 0;
    if (cap == 0)
        return buf;
    buf[0] = '\0';
    for (size_t i = 0; i < t->n; i++) {
        int k = i == NAMES_SHOWN ? snprintf(buf + len, cap - len, " and %zu more", t->n - i)
                                 : snprintf(buf + len, cap - len, "%s\"%s\"", i ? ", " : "",
                                            c->stages[t->stages[i]].name);
        if (k < 0 || (size_t)k >= cap - len || i == NAMES_SHOWN)
            break; /* cut (still terminated), or the rest counted */
        len += (size_t)k;
    }
    return buf;
}

/* Whether a trap holds a stage whose program is not a built-in. */
static bool has_own_program(const struct conf *c, const struct graph_trap *t)
{
    for (size_t i = 0; i < t->n; i++)
        if (*builtin_name(c->stages[t->stages[i]].program ? c->stages[t->stages[i]].program : "") == '\0')
            return true;
    return false;
}

size_t graph_warn_traps(const struct conf *c, const char *component)
{
    struct graph_trap *traps;
    size_t n = graph_traps(c, &traps);
    char names[1200];
    for (size_t i = 0; i < n; i++) {
        const char *own = has_own_program(c, &traps[i]) ? " (unless a stage program of its own routes elsewhere)" : "";
        graph_trap_names(c, &traps[i], names, sizeof names);
        if (traps[i].n == 1)
            log_warning(component, "stage graph: stage %s sends every message back to itself and finishes none%s; "
                        "a message that reaches it fails as a loop after MAX_HOPS (%d) hops", names, own, c->max_hops);
        else
            log_warning(component, "stage graph: stages %s form a cycle that no message can leave (each routes only "
                        "to stages of it, none finishes a message)%s; a message that enters it fails as a loop after "
                        "MAX_HOPS (%d) hops", names, own, c->max_hops);
    }
    graph_traps_free(traps, n);
    return n;
}
