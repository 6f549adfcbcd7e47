/*
 * LAB SIMULATION (never in an image): a node container shares the host's kernel, so
 * sysinfo() reports the HOST's uptime and a "powered-on" node looks as if it never rebooted.
 * Slurm's power saving waits for a resumed node to report a boot time newer than its resume
 * request (slurmctld: "Still waiting for boot of node"), so in the lab it would wait until
 * ResumeTimeout. Preloaded into every lab node container (lab/twin/nodes.py), this makes
 * sysinfo() report the time since the container's PID 1 started while the flag file ENABLED
 * exists (lab/twin/boottime.py): the container start is the node's boot, as a power-on is on a
 * real machine. Without the flag it passes the kernel's answer through unchanged.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#define ENABLED "/opt/gpufleet-lab-boottime/enabled"

static long container_started_after_boot(void)
{
    /* field 22 of /proc/1/stat: PID 1's start time in clock ticks after the host's boot;
     * the command name (field 2) may hold spaces, so parse after its closing ')' */
    char line[4096];
    FILE *stat = fopen("/proc/1/stat", "r");
    if (!stat)
        return -1;
    size_t got = fread(line, 1, sizeof(line) - 1, stat);
    fclose(stat);
    line[got] = '\0';
    char *field = strrchr(line, ')');
    if (!field)
        return -1;
    unsigned long long ticks = 0;
    /* after ')': state (3), then fields 4..21, then starttime (22) */
    if (sscanf(field + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
               &ticks) != 1)
        return -1;
    return (long)(ticks / (unsigned long long)sysconf(_SC_CLK_TCK));
}

int sysinfo(struct sysinfo *info)
{
    static int (*real_sysinfo)(struct sysinfo *);
    if (!real_sysinfo)
        real_sysinfo = (int (*)(struct sysinfo *))dlsym(RTLD_NEXT, "sysinfo");
    int rc = real_sysinfo(info);
    if (rc != 0 || access(ENABLED, F_OK) != 0)
        return rc;
    long started = container_started_after_boot();
    if (started >= 0 && info->uptime >= started)
        info->uptime -= started;
    return rc;
}
