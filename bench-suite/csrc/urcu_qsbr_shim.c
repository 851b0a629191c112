/*
 * syncbench's shim over liburcu's qsbr flavor (urcu-qsbr); see
 * urcu_memb_shim.c for why the read-side loops are written in C.
 */
#define _LGPL_SOURCE
#include <urcu/urcu-qsbr.h>
#include <stdint.h>

#define SINK(v) __asm__ volatile("" : : "r"(v) : "memory")

/* Registers the calling thread; it starts online. */
void syncbench_urcu_qsbr_register_thread(void) { urcu_qsbr_register_thread(); }

void syncbench_urcu_qsbr_unregister_thread(void) { urcu_qsbr_unregister_thread(); }

void syncbench_urcu_qsbr_quiescent_state(void) { urcu_qsbr_quiescent_state(); }

void syncbench_urcu_qsbr_thread_offline(void) { urcu_qsbr_thread_offline(); }

void syncbench_urcu_qsbr_thread_online(void) { urcu_qsbr_thread_online(); }

/* Callable from an online thread: liburcu takes it offline for the wait. */
void syncbench_urcu_qsbr_synchronize_rcu(void) { urcu_qsbr_synchronize_rcu(); }

/* Runs `iterations` read-side sections. The calling thread is online. */
void syncbench_urcu_qsbr_read_sections(uint64_t **slot, uint64_t iterations)
{
	for (uint64_t i = 0; i < iterations; i++) {
		urcu_qsbr_read_lock();
		uint64_t *p = rcu_dereference(*slot);
		SINK(*p);
		urcu_qsbr_read_unlock();
	}
}
