/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The af_hps tracepoints from the selftests: tracefs (mounted at
 * /sys/kernel/tracing if it is not yet), events switched on one by one,
 * the trace buffer read back whole. The buffer is global: a test looks
 * for its own connection in it (its port).
 */
#ifndef HPS_TRACEFS_H
#define HPS_TRACEFS_H

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define HPS_TRACEFS	"/sys/kernel/tracing"

static inline int hps_tracefs_write(const char *file, const char *val)
{
	char path[256];
	int fd, ret = 0;

	snprintf(path, sizeof(path), HPS_TRACEFS "/%s", file);
	fd = open(path, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* Mount tracefs if needed; 0 once the af_hps events are there. */
static inline int hps_tracefs_init(void)
{
	if (access(HPS_TRACEFS "/trace", F_OK) &&
	    mount("nodev", HPS_TRACEFS, "tracefs", 0, NULL))
		return -errno;
	if (access(HPS_TRACEFS "/events/af_hps", F_OK))
		return -ENOENT;
	/* a roomy buffer: a test's events must not be overwritten */
	hps_tracefs_write("buffer_size_kb", "4096");
	return 0;
}

/* Switch one event (or "*": all of af_hps) on or off. */
static inline int hps_trace_event(const char *event, int on)
{
	char file[128];

	if (!strcmp(event, "*"))
		snprintf(file, sizeof(file), "events/af_hps/enable");
	else
		snprintf(file, sizeof(file), "events/af_hps/%s/enable", event);
	return hps_tracefs_write(file, on ? "1" : "0");
}

/* Every af_hps event on, the buffer emptied. */
static inline int hps_trace_start(void)
{
	int err = hps_trace_event("*", 1);

	if (!err)
		err = hps_tracefs_write("trace", "");
	if (!err)
		err = hps_tracefs_write("tracing_on", "1");
	return err;
}

static inline void hps_trace_stop(void)
{
	hps_trace_event("*", 0);
}

/* The trace buffer as text (malloc'ed), or NULL. */
static inline char *hps_trace_read(void)
{
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	ssize_t r;
	int fd = open(HPS_TRACEFS "/trace", O_RDONLY);

	if (fd < 0 || !buf) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	for (;;) {
		if (cap - len < 4096) {
			char *n = realloc(buf, cap * 2);

			if (!n)
				break;
			buf = n;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r <= 0)
			break;
		len += r;
	}
	buf[len] = 0;
	close(fd);
	return buf;
}

/*
 * The first line of @trace with event @event (e.g. "hps_conn_connect")
 * that contains every one of the NULL-terminated strings after it; copied
 * to @line. Returns 1 if found.
 */
static inline int hps_trace_find(const char *trace, char *line, size_t len,
				 const char *event, ...)
{
	char tag[96];
	const char *p = trace;

	snprintf(tag, sizeof(tag), " %s: ", event);
	while (p && *p) {
		const char *eol = strchr(p, '\n');
		size_t n = eol ? (size_t)(eol - p) : strlen(p);
		char cur[1024];
		const char *s;
		va_list ap;
		int ok;

		if (n >= sizeof(cur))
			n = sizeof(cur) - 1;
		memcpy(cur, p, n);
		cur[n] = 0;
		ok = strstr(cur, tag) != NULL;
		va_start(ap, event);
		while (ok && (s = va_arg(ap, const char *)))
			ok = strstr(cur, s) != NULL;
		va_end(ap);
		if (ok) {
			snprintf(line, len, "%s", cur);
			return 1;
		}
		p = eol ? eol + 1 : NULL;
	}
	return 0;
}

#endif /* HPS_TRACEFS_H */
