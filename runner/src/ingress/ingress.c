/* ingress/ingress.c — placeholder until the ingress issue lands. */
#include "ingress/ingress.h"

#include "log.h"

int ingress_serve(struct conf *conf, const char *config_path)
{
    (void)conf;
    (void)config_path;
    log_error("ingress", "the webhook ingress is not built yet");
    return 1;
}
