SELECT record FROM origins;
