/* Subcommands of the `replay` command-line tool. Each takes the arguments after its own name
 * (argv[0] is the subcommand) and returns the process exit code:
 * 0 success, 1 some work failed, 2 usage or input error, 3 requested HAL unavailable. */
#ifndef XR_TOOLS_CLI_H
#define XR_TOOLS_CLI_H

int xr_cmd_devices(int argc, char **argv);   /* tools/cmd_devices.c */

#endif
