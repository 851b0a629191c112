/*
 * syncbench's shim over liburcu's qsbr flavor (urcu-qsbr); see
 * urcu_memb_shim.c for why the read-side loops are written in C.
 */
#define _LGPL_SOURCE
#include <urcu/urcu-qsbr.h>
#include <stdint.h>

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

/*
 * Registers the calling thread, and takes it offline: an idle registered
 * thread must not hold up grace periods. The read loop below is online.
 */
void syncbench_urcu_qsbr_register_thread(void)
{
	urcu_qsbr_register_thread();
	urcu_qsbr_thread_offline();
}

void syncbench_urcu_qsbr_unregister_thread(void) { urcu_qsbr_unregister_thread(); }

/* Callable from any thread: liburcu takes an online caller offline for the wait. */
void syncbench_urcu_qsbr_synchronize_rcu(void) { urcu_qsbr_synchronize_rcu(); }

/*
 * Runs `iterations` read-side sections, online for the loop. The calling
 * thread is registered and offline, and is offline again on return.
 */
void syncbench_urcu_qsbr_read_sections(uint64_t **slot, uint64_t iterations)
{
	urcu_qsbr_thread_online();
	for (uint64_t i = 0; i < iterations; i++) {
		urcu_qsbr_read_lock();
		uint64_t *p = rcu_dereference(*slot);
		SINK(*p);
		urcu_qsbr_read_unlock();
	}
	urcu_qsbr_thread_offline();
}

/*
 * Runs read-side sections until *stop, online for the loop, announcing a
 * quiescent state after every 64 sections; returns how many sections ran.
 * The calling thread is registered and offline, and is offline again on
 * return. rcu-lite-qsbr's rcuscale readers announce at the same rate
 * (QSBR_SECTIONS_PER_QS in src/rcuscale/mod.rs).
 */
uint64_t syncbench_urcu_qsbr_read_until(uint64_t **slot, const uint8_t *stop)
{
	uint64_t n = 0;
	urcu_qsbr_thread_online();
	while (!__atomic_load_n(stop, __ATOMIC_RELAXED)) {
		for (int i = 0; i < 64; i++) {
			urcu_qsbr_read_lock();
			uint64_t *p = rcu_dereference(*slot);
			SINK(*p);
			urcu_qsbr_read_unlock();
		}
		n += 64;
		urcu_qsbr_quiescent_state();
	}
	urcu_qsbr_thread_offline();
	return n;
}
