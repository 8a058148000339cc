-- The id index after an export's rows are in; an id written twice fails it, and the step.
CREATE UNIQUE INDEX origins_by_id ON origins (id);
