/* test_cond.c — the condition language of pepsi-stage-if (stages/cond.h). */
#include "stages/cond.h"
#include "unit.h"

#include <string.h>

static struct pepsi_message msg;
static char *rcpts[] = {"alice@example.org", "bob@example.net"};

static void setup_message(void)
{
    json_error_t err;
    memset(&msg, 0, sizeof msg);
    msg.id = 7;
    msg.sender_key = "ip:192.0.2.7";
    msg.tube = "orders";
    msg.subject = "Invoice 42";
    msg.header_from = "Shop <shop@example.com>";
    msg.envelope_sender = "";
    msg.recipients = rcpts;
    msg.n_recipients = 2;
    msg.state = json_loads("{\"amount\": 120, \"kind\": \"refund\", \"deep\": {\"flag\": true}}", 0, &err);
}

static bool eval(const char *text)
{
    char err[256] = "";
    struct cond *c = cond_compile(text, err, sizeof err);
    if (c == NULL) {
        CHECK(0, "compiles: %s (%s)", text, err);
        return false;
    }
    char why[512] = "";
    int r = cond_eval(c, &msg, why, sizeof why);
    CHECK(r >= 0 || !*why, "evaluates: %s (%s)", text, why);
    cond_free(c);
    return r == 1;
}

static void refuses(const char *text, const char *why)
{
    char err[256] = "";
    struct cond *c = cond_compile(text, err, sizeof err);
    CHECK(c == NULL, "D-113: refuses %s", text);
    CHECK_CONTAINS(err, why, "D-113: and says why for %s", text);
    cond_free(c);
}

int main(void)
{
    setup_message();
    CHECK(eval("tube == \"orders\""), "string equality");
    CHECK(!eval("tube != \"orders\""), "string inequality");
    CHECK(eval("subject ~ \"^Invoice [0-9]+$\""), "regular expression match");
    CHECK(eval("sender_key !~ \"^user:\""), "regular expression non-match");
    CHECK(eval("recipient ~ \"@example\\\\.net$\""), "recipient: any recipient matches");
    CHECK(!eval("recipient == \"carol@example.org\""), "recipient: none matches");
    CHECK(eval("recipients == 2"), "recipients is the count");
    CHECK(eval("recipients >= 2 and recipients < 3"), "numeric comparisons on the count");
    CHECK(eval("state.amount > 100"), "a numeric state field");
    CHECK(!eval("state.amount < 100.5"), "fractions compare too");
    CHECK(eval("state.kind == \"refund\""), "a string state field");
    CHECK(eval("state.deep.flag == \"true\""), "a nested non-string field compares as its JSON text");
    CHECK(eval("state.kind exists"), "exists: present");
    CHECK(!eval("state.missing exists"), "exists: absent");
    CHECK(eval("state.missing == \"\""), "a missing field reads as the empty string");
    CHECK(eval("envelope_sender == \"\""), "the null sender reads as the empty string");
    CHECK(eval("not tube == \"x\""), "not");
    CHECK(eval("tube == \"x\" or tube == \"orders\" and subject ~ \"Invoice\""), "and binds tighter than or");
    CHECK(!eval("(tube == \"x\" or tube == \"orders\") and subject ~ \"nope\""), "parentheses");
    CHECK(eval("subject == \"Invoice 42\" and header_from ~ \"shop@\""), "header_from");
    CHECK(!eval("state.kind > 3"), "a number comparison on text is false");
    CHECK(!eval("subject == \"Invoice \\\"42\\\"\""), "escaped quotes inside a string");
    refuses("", "expected a field");
    refuses("colour == \"red\"", "unknown field \"colour\"");
    refuses("tube = \"x\"", "expected ==");
    refuses("tube == ", "expected a \"string\" or a number");
    refuses("tube == \"open", "unterminated string");
    refuses("subject ~ \"([a-z\"", "bad regular expression");
    refuses("(tube == \"x\"", "expected \")\"");
    refuses("tube == \"x\" tube == \"y\"", "unexpected text");
    refuses("tube exists", "state fields only");
    refuses("subject < \"b\"", "compare numbers");
    json_decref(msg.state);
    return unit_done();
}
