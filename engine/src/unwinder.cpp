// Placeholder until the step loop lands.
