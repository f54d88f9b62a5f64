#include <criterion/criterion.h>
#include <cjson/cJSON.h>
Test(smoke, cjson) { cJSON *j = cJSON_Parse("[1]"); cr_assert_not_null(j); cJSON_Delete(j); }
