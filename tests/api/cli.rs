//! `coop admin …`: each command's success and refusal.
