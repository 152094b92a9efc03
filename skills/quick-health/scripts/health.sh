#!/bin/sh
# quick-health: a read-only summary of a host, one section per concern.
# Usage: sh health.sh [THRESHOLD]   (disk use in percent from which a filesystem is listed)
threshold=${1:-85}
case $threshold in
    '' | *[!0-9]*) echo "threshold must be a whole number, got: $threshold" >&2; exit 2 ;;
esac

echo "== load =="
cpus=$(nproc 2>/dev/null || grep -c ^processor /proc/cpuinfo 2>/dev/null || echo '?')
echo "cpus: $cpus"
if [ -r /proc/loadavg ]; then
    read -r one five fifteen _ < /proc/loadavg
    echo "load: $one $five $fifteen"
else
    uptime
fi

echo "== memory =="
if [ -r /proc/meminfo ]; then
    awk '/^MemTotal:/ {t=$2} /^MemAvailable:/ {a=$2} /^SwapTotal:/ {st=$2} /^SwapFree:/ {sf=$2}
        END {
            printf "total: %d MiB\navailable: %d MiB (%d%%)\n", t/1024, a/1024, (t ? a*100/t : 0)
            printf "swap used: %d MiB of %d MiB\n", (st-sf)/1024, st/1024
        }' /proc/meminfo
else
    vm_stat 2>/dev/null | head -n 5 || echo "memory: unknown on this system"
fi

echo "== disks over ${threshold}% =="
df -P 2>/dev/null | awk -v limit="$threshold" 'NR > 1 {
        use = $5; sub("%", "", use)
        if (use + 0 >= limit && $1 !~ /^(tmpfs|devtmpfs|overlay|squashfs)$/) {
            printf "%s %s%% used (%s)\n", $6, use, $1; found = 1
        }
    } END { if (!found) print "none" }'

echo "== failed services =="
if command -v systemctl >/dev/null 2>&1 && systemctl --failed --no-legend --no-pager >/dev/null 2>&1; then
    failed=$(systemctl --failed --no-legend --no-pager --plain 2>/dev/null | awk '{print $1}')
    echo "${failed:-none}"
else
    echo "no systemd here"
fi

echo "== busiest processes =="
(ps -eo pid,%cpu,%mem,comm --sort=-%cpu 2>/dev/null || ps aux) | head -n 6
