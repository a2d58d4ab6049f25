"""This process's resident memory: now (from /proc/self/statm, the same figure as VmRSS in
/proc/self/status) and at its peak (getrusage's ru_maxrss, which Linux gives in KiB)."""

import os
import resource


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def rss_kb():
    return rss_bytes() // 1024


def rss_mb():
    return rss_bytes() / 2**20


def peak_rss_kb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def peak_rss_mb():
    return peak_rss_kb() / 1024
