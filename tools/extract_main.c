/* Standalone `extract` driver (the same code as `replay extract`), for development. */
#include "tools/cmd_extract.h"

int main(int argc, char **argv) { return xr_cmd_extract(argc, argv); }
