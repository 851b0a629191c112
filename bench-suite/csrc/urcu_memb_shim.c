/*
 * syncbench's shim over liburcu's memb flavor (urcu-memb).
 *
 * liburcu's read-side lock and unlock are static inline functions in its
 * headers (with _LGPL_SOURCE), so the fair way to measure them is from C: the
 * loops below run liburcu's real inlined fast path, and Rust calls each loop
 * once per timed run. The update side (synchronize, registration) is exported
 * by the library and only wrapped here so that Rust links one small API.
 *
 * Each section reads the u64 behind *slot through rcu_dereference() and hides
 * the value from the optimizer, as the Rust contenders do with black_box.
 */
#define _LGPL_SOURCE
#include <urcu/urcu-memb.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/*
 * Hides v from the optimizer the way Rust's std::hint::black_box does, which
 * the Rust contenders use: it takes the value's address, so each section
 * stores the value to the stack, as theirs do.
 */
#define SINK(v)                                                    \
	do {                                                       \
		uint64_t sink_ = (v);                              \
		__asm__ volatile("" : : "r"(&sink_) : "memory");   \
	} while (0)

void syncbench_urcu_memb_register_thread(void) { urcu_memb_register_thread(); }

void syncbench_urcu_memb_unregister_thread(void) { urcu_memb_unregister_thread(); }

void syncbench_urcu_memb_synchronize_rcu(void) { urcu_memb_synchronize_rcu(); }

/*
 * Whether the memb flavor found membarrier(2) when the library loaded: if
 * not, its readers issue smp_mb() in every lock and unlock (and its
 * synchronize_rcu() none). A macro for 1 where liburcu was configured to
 * require membarrier.
 */
int syncbench_urcu_memb_has_sys_membarrier(void) { return urcu_memb_has_sys_membarrier; }

/* Runs `iterations` read-side sections. The calling thread is registered. */
void syncbench_urcu_memb_read_sections(uint64_t **slot, uint64_t iterations)
{
	for (uint64_t i = 0; i < iterations; i++) {
		urcu_memb_read_lock();
		uint64_t *p = rcu_dereference(*slot);
		SINK(*p);
		urcu_memb_read_unlock();
	}
}

/* Runs sections in batches of 64 until *stop is set; returns how many ran. */
uint64_t syncbench_urcu_memb_read_until(uint64_t **slot, const uint8_t *stop)
{
	uint64_t n = 0;
	while (!__atomic_load_n(stop, __ATOMIC_RELAXED)) {
		for (int i = 0; i < 64; i++) {
			urcu_memb_read_lock();
			uint64_t *p = rcu_dereference(*slot);
			SINK(*p);
			urcu_memb_read_unlock();
		}
		n += 64;
	}
	return n;
}

/*
 * For the fork_wait example: a call_rcu() callback that sleeps for `us`
 * microseconds (0: none) and frees its own head. The caller is a registered
 * thread, as liburcu's call_rcu() requires.
 */
struct syncbench_sleeper {
	struct rcu_head head;
	uint64_t us;
};

static void syncbench_sleeper_run(struct rcu_head *head)
{
	struct syncbench_sleeper *s = caa_container_of(head, struct syncbench_sleeper, head);

	/*
	 * nanosleep, not usleep: useconds_t is 32 bits, which cut a sleep of
	 * 2^32 us or more to what was left over (the Rust side, which sleeps
	 * the whole value, then measured another workload than this one).
	 */
	if (s->us) {
		struct timespec left = {
			.tv_sec = (time_t)(s->us / 1000000),
			.tv_nsec = (long)(s->us % 1000000) * 1000,
		};

		while (nanosleep(&left, &left) != 0 && errno == EINTR)
			;
	}
	free(s);
}

/* Returns 0, or -1 if the callback could not be allocated. */
int syncbench_urcu_memb_call_rcu_sleeping(uint64_t us)
{
	struct syncbench_sleeper *s = malloc(sizeof(*s));

	if (!s)
		return -1;
	s->us = us;
	urcu_memb_call_rcu(&s->head, syncbench_sleeper_run);
	return 0;
}

/* liburcu's fork hooks for its call_rcu threads (the memb flavor's). */
void syncbench_urcu_memb_call_rcu_before_fork(void) { urcu_memb_call_rcu_before_fork(); }

void syncbench_urcu_memb_call_rcu_after_fork_parent(void) { urcu_memb_call_rcu_after_fork_parent(); }
