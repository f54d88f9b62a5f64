/* `replay extract`: a bundle straight from a PyTorch profiler trace. */
#ifndef XR_TOOLS_CMD_EXTRACT_H
#define XR_TOOLS_CMD_EXTRACT_H

/* argv[0] is the subcommand name. Returns 0 on success, 1 when extraction failed, 2 on a usage
 * or input error (the exit codes of tools/cli.h). */
int xr_cmd_extract(int argc, char **argv);

#endif
