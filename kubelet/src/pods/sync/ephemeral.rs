//! Ephemeral containers (`kubectl debug`): each is started once, when it has never been made,
//! in the pod's network and IPC namespaces and, with a `targetContainerName`, in the process
//! namespace of that (running) container, as upstream's kubelet starts them; they are never
//! restarted and never count for the pod's phase or readiness.

use super::*;

impl Syncer {
    /// Starts the ephemeral containers of `pod` that were never made (unless `start` is false:
    /// a pod whose containers are done runs nothing new). `others` are the init and app
    /// containers as this sync left them (where a target is found). Their views, for
    /// `ephemeralContainerStatuses`, and whether it started anything.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn ephemeral_containers(
        &self,
        pod: &Pod,
        records: &[ContainerRecord],
        others: &[&ContainerView],
        start: bool,
        lookup: &mut Lookup<'_>,
        inputs: &StartInputs<'_>,
        state: &mut PodState,
    ) -> (Vec<ContainerView>, bool) {
        let spec = pod.spec.as_ref();
        let share_pid = spec.and_then(|s| s.share_process_namespace).unwrap_or(false);
        let mut views = Vec::new();
        let mut busy = false;
        for ephemeral in spec.and_then(|s| s.ephemeral_containers.as_ref()).into_iter().flatten() {
            let container = spec::ephemeral_as_container(ephemeral);
            let mut view = view_of(records, &container);
            if view.current.is_some() || !start {
                views.push(view);
                continue;
            }
            // With a shared process namespace every container is in the pod's; otherwise a
            // target's own, which must be running (upstream's getTargetID).
            let target = ephemeral.target_container_name.as_deref().filter(|t| !t.is_empty());
            let pid_target = match target.filter(|_| !share_pid) {
                None => None,
                Some(name) => {
                    let running = others
                        .iter()
                        .find(|v| v.name == name && v.is_running())
                        .and_then(|v| v.current.as_ref());
                    match running {
                        Some(record) => Some(record.id.clone()),
                        None => {
                            let message = format!("unable to find target container {name}");
                            if state
                                .recorded
                                .insert(format!("ephemeral/{}/{message}", ephemeral.name))
                            {
                                self.recorder.record(
                                    &pod_reference(pod),
                                    "Warning",
                                    "Failed",
                                    &format!("Error: {message}"),
                                );
                            }
                            view.waiting = Some(("CreateContainerConfigError".into(), message));
                            views.push(view);
                            continue;
                        }
                    }
                }
            };
            busy = true;
            let inputs =
                StartInputs { pid_target, service_env: inputs.service_env.clone(), ..*inputs };
            match self.start(pod, &container, false, 0, lookup, &inputs, state).await {
                Err(waiting) => view.waiting = Some(waiting),
                Ok(id) => view.current = self.runtime.inspect(&id).await.ok(),
            }
            views.push(view);
        }
        (views, busy)
    }
}
