/* cli_path.c — do two command-line paths name one file (cli_path.h)? */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/base.h"
#include "cli_path.h"

/* path with its folder resolved ("." for none), or a copy of path when the
 * folder does not resolve. malloc'd. */
static char *canonical(const char *path)
{
    const char *slash = strrchr(path, '/');
    strbuf b = {0};
    if (slash == path) {
        sb_puts(&b, path);
        return sb_take(&b);
    }
    if (slash) sb_printf(&b, "%.*s", (int)(slash - path), path);
    else sb_puts(&b, ".");
    char *dir = sb_take(&b);
    char *real = realpath(dir, NULL);
    free(dir);
    if (real) sb_printf(&b, "%s/%s", real, slash ? slash + 1 : path);
    else sb_puts(&b, path);
    free(real);
    return sb_take(&b);
}

int cli_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea && eb) return S_ISREG(sa.st_mode) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ea != eb) return 0;
    char *ca = canonical(a), *cb = canonical(b);
    int same = !strcmp(ca, cb);
    free(ca);
    free(cb);
    return same;
}
