#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
static void test_placeholder(void **st) { (void)st; }
int main(void) {
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_placeholder) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
