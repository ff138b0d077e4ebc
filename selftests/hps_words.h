/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The checked stream of hps_share and hps_across: 8-byte words, each
 * naming its writer (top byte) and its index in that writer's stream (the
 * other 56 bits). Writers write whole words from 8-byte aligned buffers,
 * readers read whole words into 8-byte aligned buffers, and AF_HPS then
 * hands out pieces that are whole words too (its buffers hold buf_size - 8
 * bytes, a multiple of 8 at the default buf_size; zero-copy reads end on
 * page or request boundaries). So every piece a reader gets can be checked
 * on its own: each word must belong to a writer and be new (a bitmap per
 * writer catches duplicates), a writer's words within one piece must be
 * consecutive, and across the pieces one reader gets they must increase.
 * At the end every word of every writer must have been seen once: nothing
 * lost, nothing duplicated.
 */
#ifndef HPS_WORDS_H
#define HPS_WORDS_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>

#include "hps_util.h"

#define WORD		8
#define IDX_MASK	((1ULL << 56) - 1)
#define MAXW		4
#define MAXR		4
#define KB(n)		((n) * 1024 / WORD)	/* in words */

/* what the injection points are called in hps.h */
enum { INJ_NONE, INJ_TX_RESERVE, INJ_ZC_RX_WAIT, INJ_ZC_TX_POST, INJ_ZC_RD_DONE };
#define HPS_INJECT_QP_EVENT	1000	/* SOL_HPS, test builds */

struct share {
	int wfd, rfd;		/* writers' and readers' socket */
	int nw, nr;		/* threads (0: that side runs elsewhere) */
	int wbase;		/* writer ids used here start at this */
	size_t words;		/* per writer */
	size_t wmin, wmax;	/* words per write */
	size_t rmin, rmax;	/* words per read */
	int stall;		/* 1 in this many calls sleeps a little */
	int peek;		/* readers also peek */
	int nodelay;
	_Atomic unsigned char *seen[MAXW];
	_Atomic long errors;
	_Atomic long reads, peeks, bytes;
	char first[256];
	pthread_mutex_t lock;
};

struct worker {
	struct share *s;
	int id;
	unsigned long long rng;
	unsigned long long last[MAXW];	/* reader: last index seen + 1 */
};

static inline unsigned long long rnd(unsigned long long *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static inline size_t rnd_range(unsigned long long *s, size_t lo, size_t hi)
{
	return lo + rnd(s) % (hi - lo + 1);
}

static inline void fail(struct share *s, const char *fmt, ...)
{
	va_list ap;

	if (atomic_fetch_add(&s->errors, 1))
		return;
	va_start(ap, fmt);
	vsnprintf(s->first, sizeof(s->first), fmt, ap);
	va_end(ap);
}

static inline void maybe_stall(struct worker *w)
{
	if (w->s->stall && rnd(&w->rng) % w->s->stall == 0)
		usleep(rnd_range(&w->rng, 1000, 20000));
}

static inline void *writer(void *arg)
{
	struct worker *w = arg;
	struct share *s = w->s;
	unsigned long long *buf = malloc(s->wmax * WORD);
	unsigned long long tag = (unsigned long long)w->id << 56;
	size_t idx = 0;

	while (idx < s->words && !atomic_load(&s->errors)) {
		size_t n = rnd_range(&w->rng, s->wmin, s->wmax), i;
		ssize_t r;

		if (n > s->words - idx)
			n = s->words - idx;
		for (i = 0; i < n; i++)
			buf[i] = tag | (idx + i);
		r = send(s->wfd, buf, n * WORD, MSG_NOSIGNAL);
		if (r != (ssize_t)(n * WORD)) {
			fail(s, "writer %d: send(%zu) = %zd (%s)", w->id,
			     n * WORD, r, r < 0 ? strerror(errno) : "short");
			break;
		}
		idx += n;
		maybe_stall(w);
	}
	free(buf);
	return NULL;
}

/* Check one piece a reader got. */
static inline void check_piece(struct worker *w, const unsigned long long *p,
			size_t n, int peeked)
{
	struct share *s = w->s;
	unsigned long long next[MAXW] = { 0 };
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned int id = p[i] >> 56;
		unsigned long long idx = p[i] & IDX_MASK;

		if (id >= (unsigned int)MAXW || !s->seen[id] || idx >= s->words) {
			fail(s, "reader %d: word %zu of a %zu-word piece is %#llx: no writer wrote it",
			     w->id, i, n, p[i]);
			return;
		}
		if (next[id] && idx != next[id]) {
			fail(s, "reader %d: writer %u's words %llu then %llu within one piece",
			     w->id, id, next[id] - 1, idx);
			return;
		}
		next[id] = idx + 1;
		if (peeked)
			continue;
		if (idx < w->last[id]) {
			fail(s, "reader %d: writer %u's word %llu after %llu",
			     w->id, id, idx, w->last[id] - 1);
			return;
		}
		w->last[id] = idx + 1;
		if (atomic_exchange(&s->seen[id][idx], 1)) {
			fail(s, "reader %d: writer %u's word %llu seen twice",
			     w->id, id, idx);
			return;
		}
	}
}

static inline void *reader(void *arg)
{
	struct worker *w = arg;
	struct share *s = w->s;
	unsigned long long *buf = malloc(s->rmax * WORD);

	for (;;) {
		size_t n = rnd_range(&w->rng, s->rmin, s->rmax) * WORD;
		int peek = s->peek && rnd(&w->rng) % 3 == 0;
		ssize_t r = recv(s->rfd, buf, n, peek ? MSG_PEEK : 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fail(s, "reader %d: recv: %s", w->id, strerror(errno));
			break;
		}
		if (!r)
			break;
		if (r % WORD) {
			fail(s, "reader %d: a piece of %zd bytes (not whole words)",
			     w->id, r);
			break;
		}
		check_piece(w, buf, r / WORD, peek);
		if (atomic_load(&s->errors))
			break;
		atomic_fetch_add(peek ? &s->peeks : &s->reads, 1);
		if (!peek)
			atomic_fetch_add(&s->bytes, r);
		maybe_stall(w);
	}
	free(buf);
	return NULL;
}

/*
 * A writer's stream, in words: @mib MiB, an eighth of it on make
 * check-debug's kernel (which moves about 1 MB/s), at least 1 MiB.
 */
static inline size_t share_words(size_t mib)
{
	if (getenv("HPS_DEBUG_KERNEL"))
		mib = mib >= 8 ? mib / 8 : 1;
	return mib * (1 << 20) / WORD;
}

static inline void share_init(struct share *s, int nw_total)
{
	int i;

	for (i = 0; i < nw_total; i++)
		s->seen[i] = calloc(s->words, 1);
}

static inline void share_free(struct share *s)
{
	int i;

	for (i = 0; i < MAXW; i++)
		free((void *)s->seen[i]);
}

/* Readers' verdict: every word of every writer seen once. */
static inline int share_complete(struct share *s, int nw_total)
{
	int i;
	size_t j;

	for (i = 0; i < nw_total && !atomic_load(&s->errors); i++)
		for (j = 0; j < s->words; j++)
			if (!s->seen[i][j]) {
				fail(s, "writer %d's word %zu never arrived", i, j);
				break;
			}
	return !atomic_load(&s->errors);
}

/*
 * Run the writers and readers of @s that live here; the writers' side is
 * shut down for writing when they are done. Returns once both are done.
 */
static inline void share_run(struct share *s)
{
	pthread_t wt[MAXW], rt[MAXR];
	struct worker ww[MAXW], rw[MAXR];
	int i;

	for (i = 0; i < s->nr; i++) {
		rw[i] = (struct worker){ .s = s, .id = i,
					 .rng = 0x9e3779b97f4a7c15ULL * (i + 1) ^ getpid() };
		pthread_create(&rt[i], NULL, reader, &rw[i]);
	}
	for (i = 0; i < s->nw; i++) {
		ww[i] = (struct worker){ .s = s, .id = s->wbase + i,
					 .rng = 0xbf58476d1ce4e5b9ULL * (i + 7) ^ getpid() };
		pthread_create(&wt[i], NULL, writer, &ww[i]);
	}
	for (i = 0; i < s->nw; i++)
		pthread_join(wt[i], NULL);
	if (s->nw)
		shutdown(s->wfd, SHUT_WR);
	for (i = 0; i < s->nr; i++)
		pthread_join(rt[i], NULL);
}

static inline int set_int(int fd, int level, int opt, int val)
{
	return setsockopt(fd, level, opt, &val, sizeof(val));
}

static inline int inject(int point, int ms)
{
	FILE *f = fopen("/sys/module/af_hps/parameters/inject_ms", "w");

	if (!f)
		return -1;
	fprintf(f, "%d\n", ms);
	fclose(f);
	f = fopen("/sys/module/af_hps/parameters/inject_point", "w");
	if (!f)
		return -1;
	fprintf(f, "%d\n", point);
	fclose(f);
	return 0;
}

/* net.hps.@knob: the old value to @old (if not NULL), then set to @val. */
static inline int hps_sysctl(const char *knob, const char *val, char *old,
			     size_t n)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/sys/net/hps/%s", knob);
	if (old) {
		f = fopen(path, "r");
		if (!f || !fgets(old, n, f))
			return -1;
		fclose(f);
		old[strcspn(old, "\n")] = 0;
	}
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "%s\n", val);
	return fclose(f) ? -1 : 0;
}

/*
 * A connected pair over RDMA loopback, zero copy from @zc bytes (0: off);
 * the accepted end's SO_RCVBUF @rcvbuf (0: the default), which sets its
 * window.
 */
static inline int zc_pair_rcvbuf(int *cfd, int *afd, int zc, int rcvbuf)
{
	int port, l = hps_listener(&port, 4);

	*cfd = *afd = -1;
	if (l < 0)
		return -1;
	/* a connection gets zero copy's resources only if it is on then */
	set_int(l, SOL_HPS, HPS_ZCOPY_THRESH, zc);
	if (rcvbuf)
		set_int(l, SOL_SOCKET, SO_RCVBUF, rcvbuf);
	*cfd = socket(AF_HPS, SOCK_STREAM, 0);
	set_int(*cfd, SOL_HPS, HPS_ZCOPY_THRESH, zc);
	{
		struct sockaddr_in sin;

		hps_sin(&sin, hps_env("HPS_SELF", "127.0.0.1"), port);
		if (connect(*cfd, (struct sockaddr *)&sin, sizeof(sin))) {
			close(l);
			return -1;
		}
	}
	*afd = accept(l, NULL, NULL);
	close(l);
	return *afd >= 0 ? 0 : -1;
}

static inline int zc_pair(int *cfd, int *afd, int zc)
{
	return zc_pair_rcvbuf(cfd, afd, zc, 0);
}


#endif /* HPS_WORDS_H */
