/* replay.c — runs a libFuzzer target without libFuzzer (issue 11).
 *
 * Linked with one runner/fuzz/fuzz_NAME.c by the normal compiler (gcc,
 * optionally with ASan/UBSan or under valgrind), it feeds every file given
 * on the command line, and every regular file in every directory given
 * (sorted by name, dot files skipped), to LLVMFuzzerTestOneInput() once.
 * Without arguments it replays runner/fuzz/corpus/NAME/ (which must exist)
 * and runner/fuzz/regressions/NAME/ (when it exists), NAME being the
 * FUZZ_NAME the Makefile compiles in, so `make test` runs every committed
 * seed and every fixed crash input as a regression test.
 *
 * Output follows the unit tests: "ok N - ..." per input, then
 * "N passed, N failed". A target that crashes, trips a sanitizer or aborts
 * on a failed check ends the process with its signal or sanitizer status:
 * no summary line, a non-zero exit, and scripts/run-unit-tests reports it. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef FUZZ_NAME
#error "compile with -DFUZZ_NAME='\"name\"' (see the Makefile)"
#endif

#define REPLAY_MAX_INPUT (16 << 20)   /* refuse to replay anything bigger */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct tally {
    int passed;
    int failed;
};

static void report(struct tally *t, int ok, const char *path, const char *why)
{
    if (ok)
        t->passed++;
    else
        t->failed++;
    printf("%sok %d - issue 11: fuzz_%s replays %s%s%s\n", ok ? "" : "not ", t->passed + t->failed,
           FUZZ_NAME, path, why ? ": " : "", why ? why : "");
    fflush(stdout);
}

/* Reads path whole into a malloc'd buffer (never NULL, even when empty). */
static uint8_t *slurp(const char *path, size_t *len, const char **why)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f) {
        *why = strerror(errno);
        return NULL;
    }
    if (fstat(fileno(f), &st) != 0 || st.st_size > REPLAY_MAX_INPUT) {
        *why = "cannot stat, or larger than 16 MiB";
        fclose(f);
        return NULL;
    }
    uint8_t *buf = malloc((size_t)st.st_size + 1);
    size_t n = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
    int bad = !buf || ferror(f) || n != (size_t)st.st_size;
    fclose(f);
    if (bad) {
        *why = buf ? "short read" : "out of memory";
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

static void replay_file(struct tally *t, const char *path)
{
    const char *why = NULL;
    size_t len = 0;
    uint8_t *data = slurp(path, &len, &why);
    if (!data) {
        report(t, 0, path, why);
        return;
    }
    /* A copy of exactly len bytes, so that ASan and valgrind see a read
     * past the input as the overflow it is. */
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy) {
        free(data);
        report(t, 0, path, "out of memory");
        return;
    }
    memcpy(copy, data, len);
    free(data);
    LLVMFuzzerTestOneInput(copy, len);
    free(copy);
    report(t, 1, path, NULL);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of dir in name order; 0, or -1 when dir cannot be read. */
static int replay_dir(struct tally *t, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    char **names = NULL;
    size_t n = 0, cap = 0;
    const struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **grown = realloc(names, cap * sizeof *names);
            if (!grown)
                break;
            names = grown;
        }
        if (!(names[n] = strdup(e->d_name)))
            break;
        n++;
    }
    closedir(d);
    if (n > 0)
        qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
            replay_file(t, path);
        free(names[i]);
    }
    free(names);
    return 0;
}

static void replay_arg(struct tally *t, const char *arg, int must_exist)
{
    struct stat st;
    if (stat(arg, &st) != 0) {
        if (must_exist)
            report(t, 0, arg, strerror(errno));
        return;
    }
    if (!S_ISDIR(st.st_mode))
        replay_file(t, arg);
    else if (replay_dir(t, arg) < 0)
        report(t, 0, arg, "cannot read the directory");
}

int main(int argc, char **argv)
{
    struct tally t = {0, 0};
    if (argc > 1) {
        for (int i = 1; i < argc; i++)
            replay_arg(&t, argv[i], 1);
    } else {
        replay_arg(&t, "runner/fuzz/corpus/" FUZZ_NAME, 1);
        replay_arg(&t, "runner/fuzz/regressions/" FUZZ_NAME, 0);
    }
    if (t.passed + t.failed == 0)
        report(&t, 0, argc > 1 ? argv[1] : "runner/fuzz/corpus/" FUZZ_NAME, "no input at all");
    printf("%d passed, %d failed\n", t.passed, t.failed);
    return t.failed == 0 ? 0 : 1;
}
