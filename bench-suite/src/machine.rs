//! A description of the machine a measurement ran on, for reports.

use serde::Serialize;

/// What a reader of a report needs to judge its numbers.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// CPU model name from `/proc/cpuinfo`.
    pub cpu: String,
    /// CPUs this process may run on.
    pub cores: usize,
    /// Kernel release (`/proc/sys/kernel/osrelease`).
    pub kernel: String,
    /// The compiler that built `syncbench`.
    pub rustc: String,
    /// The fence mode `hazptr` and `rcu-lite` use on this machine.
    pub fence_mode: String,
}

impl Machine {
    /// Describes the current machine.
    pub fn current() -> Machine {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_owned())
            })
            .unwrap_or_else(|| std::env::consts::ARCH.to_owned());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_owned())
            .unwrap_or_else(|_| std::env::consts::OS.to_owned());
        Machine {
            cpu,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            kernel,
            rustc: env!("SYNCBENCH_RUSTC_VERSION").to_owned(),
            fence_mode: membarrier_sim::fence::mode().to_string(),
        }
    }

    /// One line for report headers.
    pub fn summary(&self) -> String {
        format!(
            "{} ({} CPUs), Linux {}, {}, fences: {}",
            self.cpu, self.cores, self.kernel, self.rustc, self.fence_mode
        )
    }
}
