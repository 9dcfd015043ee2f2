/* fuzz_suite.c - libFuzzer harness for suite files: the JSON parser and
 * expander of `lbscale suite` (vars, foreach products, placeholders,
 * numbers given as strings) through suite_parse_text, which validates the
 * document but probes and runs nothing.  Input: the suite text (cut at a
 * NUL).  An accepted suite has entries; a refused one none.  Built by
 * tests/fuzz/build.sh (run with -close_fd_mask=2: each refusal prints
 * its one line).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    size_t n = 0;
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    int rc = suite_parse_text(text, &n);
    if ((rc == 0) != (n > 0))
        abort();
    free(text);
    return 0;
}
