/* cli_env.h — the environment, read here and only here: the library reads
 * none (DESIGN.md §6); the CLI turns variables into options it passes. */
#ifndef TSL_CLI_ENV_H
#define TSL_CLI_ENV_H

/* The strategies' options from the environment, as option text appended to
 * buf (size n, NUL-terminated): TESSEL_OPTIONS ("key=value,..."), and the
 * older single-purpose variables, each mapped to its keys:
 *   TESSEL_SCHED=generic             sched.generic=1
 *   TESSEL_CPU_NO_RBLK=1             conv.cpu=0
 *   TESSEL_CPU_NO_UKR=1              cpu.micro_kernels=0
 *   TESSEL_NO_FULLRED=1              sched.full_reductions=0
 *   TESSEL_CONTRACT_CPU=BM,BN,BK,TM,TN,STAGES       contract.cpu.*
 *   TESSEL_CONTRACT=BM,BN,BK,WM,WN,PAD[,STAGES]     contract.mma.*
 * Returns 0, or -1 (after a message on stderr) when a variable is malformed. */
int cli_env_options(char *buf, unsigned long n);

#endif
