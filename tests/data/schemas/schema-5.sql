BEGIN TRANSACTION;
CREATE TABLE alembic_version (
	version_num VARCHAR(32) NOT NULL, 
	CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
);
INSERT INTO "alembic_version" VALUES('v3.2.0.a');
CREATE TABLE commtune_knob_values (
	platform VARCHAR(32) NOT NULL, 
	knob VARCHAR(128) NOT NULL, 
	value VARCHAR(256) NOT NULL, 
	ok BOOLEAN NOT NULL, 
	reason TEXT NOT NULL, 
	checked FLOAT NOT NULL, 
	PRIMARY KEY (platform, knob, value)
);
CREATE TABLE commtune_meta (
	"key" VARCHAR(64) NOT NULL, 
	value TEXT NOT NULL, 
	PRIMARY KEY ("key")
);
INSERT INTO "commtune_meta" VALUES('schema_version','5');
CREATE TABLE commtune_models (
	platform VARCHAR(32) NOT NULL, 
	data TEXT NOT NULL, 
	created FLOAT NOT NULL, 
	PRIMARY KEY (platform)
);
CREATE TABLE commtune_platforms (
	"key" VARCHAR(32) NOT NULL, 
	data TEXT NOT NULL, 
	created FLOAT NOT NULL, 
	PRIMARY KEY ("key")
);
INSERT INTO "commtune_platforms" VALUES('71bdf03684039d8d','{"cpu_model": "AMD EPYC", "cores": 2, "mpi_vendor": "openmpi", "mpi_version": "4.1.4", "mpi_device": "pml:cm,monitoring,ob1,ucx,v btl:ofi,openib,self,tcp,vader", "ranks_per_node": null}',1.79547175947049617765e+09);
CREATE TABLE commtune_profiles (
	study VARCHAR(512) NOT NULL, 
	trial INTEGER NOT NULL, 
	run INTEGER NOT NULL, 
	data TEXT NOT NULL, 
	created FLOAT NOT NULL, 
	PRIMARY KEY (study, trial, run)
);
CREATE TABLE commtune_samples (
	platform VARCHAR(32) NOT NULL, 
	data TEXT NOT NULL, 
	created FLOAT NOT NULL, 
	PRIMARY KEY (platform)
);
CREATE TABLE commtune_training (
	platform VARCHAR(32) NOT NULL, 
	point VARCHAR(256) NOT NULL, 
	config VARCHAR(1024) NOT NULL, 
	data TEXT NOT NULL, 
	created FLOAT NOT NULL, 
	PRIMARY KEY (platform, point, config)
);
CREATE TABLE studies (
	study_id INTEGER NOT NULL, 
	study_name VARCHAR(512) NOT NULL, 
	PRIMARY KEY (study_id)
);
INSERT INTO "studies" VALUES(1,'s5');
CREATE TABLE study_directions (
	study_direction_id INTEGER NOT NULL, 
	direction VARCHAR(8) NOT NULL, 
	study_id INTEGER NOT NULL, 
	objective INTEGER NOT NULL, 
	PRIMARY KEY (study_direction_id), 
	UNIQUE (study_id, objective), 
	FOREIGN KEY(study_id) REFERENCES studies (study_id)
);
INSERT INTO "study_directions" VALUES(1,'MINIMIZE',1,0);
CREATE TABLE study_system_attributes (
	study_system_attribute_id INTEGER NOT NULL, 
	study_id INTEGER, 
	"key" VARCHAR(512), 
	value_json TEXT, 
	PRIMARY KEY (study_system_attribute_id), 
	UNIQUE (study_id, "key"), 
	FOREIGN KEY(study_id) REFERENCES studies (study_id)
);
CREATE TABLE study_user_attributes (
	study_user_attribute_id INTEGER NOT NULL, 
	study_id INTEGER, 
	"key" VARCHAR(512), 
	value_json TEXT, 
	PRIMARY KEY (study_user_attribute_id), 
	UNIQUE (study_id, "key"), 
	FOREIGN KEY(study_id) REFERENCES studies (study_id)
);
INSERT INTO "study_user_attributes" VALUES(1,1,'commtune','{"command": ["true"], "library": "openmpi", "space": [{"knob": "btl_vader_eager_limit", "values": [4096, 8192, 16384]}], "metric": "wall", "repeats": 3, "statistic": "median", "scale": null, "objectives": []}');
INSERT INTO "study_user_attributes" VALUES(2,1,'platform','"71bdf03684039d8d"');
INSERT INTO "study_user_attributes" VALUES(3,1,'acceptance','{"format": 2, "source": "search", "params": {"btl_vader_eager_limit": 4096}, "accepted": false, "reason": "not faster beyond noise", "speedup": 0.9972769691666888, "ci": [0.8832530912406062, 1.1302200592884168], "p_value": 0.660614013671875, "trial": 6, "measured_trials": 4, "default_values": [0.0071684759996060166, 0.003927226000087103, 0.00413803099991128, 0.0038293330003398296, 0.004113676000088162, 0.005419855000127427, 0.0059453610001583, 0.005310711000220181, 0.005590554999798769, 0.008250224000221351, 0.005470861000048899, 0.0055249530000764935, 0.006262576000153786, 0.005303937999997288, 0.005305380999743647], "best_values": [0.004428866999660386, 0.0037913210003353015, 0.004106402000161324, 0.004152728999997635, 0.004120187999888003, 0.010152140999707626, 0.005260356999770011, 0.00575747799985038, 0.00805228299986993, 0.005532277000384056, 0.0054857989998708945, 0.006255231999602984, 0.005313266000030126, 0.005467974999646685, 0.006343517999994219], "env": {}, "extra": {"mean_speedup": 0.968431711349631, "objectives": {}, "clusters": [], "candidates": [{"trial": 2, "params": {"btl_vader_eager_limit": 8192}, "values": [0.003880307999679644, 0.004867129000103887, 0.0041437820000282954, 0.004094619000170496, 0.004109928000161744, 0.007639468999968813, 0.005295442000260664, 0.006107023999902594, 0.005527346999770089, 0.00546068199992078, 0.006307149999884132, 0.005597659000159183, 0.0055143129998214135, 0.0062252459997580445, 0.005523840000023483], "rounds": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14], "failure": "", "speedup": 0.9870113559828095, "ci": [0.8674061977516634, 1.1227317757168607], "p_value": 0.755645751953125, "faster": false, "objectives": {}}, {"trial": 6, "params": {"btl_vader_eager_limit": 4096}, "values": [0.004428866999660386, 0.0037913210003353015, 0.004106402000161324, 0.004152728999997635, 0.004120187999888003, 0.010152140999707626, 0.005260356999770011, 0.00575747799985038, 0.00805228299986993, 0.005532277000384056, 0.0054857989998708945, 0.006255231999602984, 0.005313266000030126, 0.005467974999646685, 0.006343517999994219], "rounds": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14], "failure": "", "speedup": 0.9972769691666888, "ci": [0.8832530912406062, 1.1302200592884168], "p_value": 0.660614013671875, "faster": false, "objectives": {}}], "statistic": "median", "rounds": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]}}');
CREATE TABLE trial_heartbeats (
	trial_heartbeat_id INTEGER NOT NULL, 
	trial_id INTEGER NOT NULL, 
	heartbeat DATETIME NOT NULL, 
	PRIMARY KEY (trial_heartbeat_id), 
	UNIQUE (trial_id), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
CREATE TABLE trial_intermediate_values (
	trial_intermediate_value_id INTEGER NOT NULL, 
	trial_id INTEGER NOT NULL, 
	step INTEGER NOT NULL, 
	intermediate_value FLOAT, 
	intermediate_value_type VARCHAR(7) NOT NULL, 
	PRIMARY KEY (trial_intermediate_value_id), 
	UNIQUE (trial_id, step), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
CREATE TABLE trial_params (
	param_id INTEGER NOT NULL, 
	trial_id INTEGER, 
	param_name VARCHAR(512), 
	param_value FLOAT, 
	distribution_json TEXT, 
	PRIMARY KEY (param_id), 
	UNIQUE (trial_id, param_name), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
INSERT INTO "trial_params" VALUES(1,2,'btl_vader_eager_limit',2.0,'{"name": "CategoricalDistribution", "attributes": {"choices": [12, 13, 14]}}');
INSERT INTO "trial_params" VALUES(2,3,'btl_vader_eager_limit',1.0,'{"name": "CategoricalDistribution", "attributes": {"choices": [12, 13, 14]}}');
INSERT INTO "trial_params" VALUES(3,5,'btl_vader_eager_limit',1.0,'{"name": "CategoricalDistribution", "attributes": {"choices": [12, 13, 14]}}');
INSERT INTO "trial_params" VALUES(4,6,'btl_vader_eager_limit',1.0,'{"name": "CategoricalDistribution", "attributes": {"choices": [12, 13, 14]}}');
INSERT INTO "trial_params" VALUES(5,7,'btl_vader_eager_limit',0.0,'{"name": "CategoricalDistribution", "attributes": {"choices": [12, 13, 14]}}');
CREATE TABLE trial_system_attributes (
	trial_system_attribute_id INTEGER NOT NULL, 
	trial_id INTEGER, 
	"key" VARCHAR(512), 
	value_json TEXT, 
	PRIMARY KEY (trial_system_attribute_id), 
	UNIQUE (trial_id, "key"), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
INSERT INTO "trial_system_attributes" VALUES(1,5,'tpe:relative_params:0','"{\"btl_vader_eager_limit\": 13}"');
INSERT INTO "trial_system_attributes" VALUES(2,6,'tpe:relative_params:0','"{\"btl_vader_eager_limit\": 13}"');
INSERT INTO "trial_system_attributes" VALUES(3,7,'tpe:relative_params:0','"{\"btl_vader_eager_limit\": 12}"');
CREATE TABLE trial_user_attributes (
	trial_user_attribute_id INTEGER NOT NULL, 
	trial_id INTEGER, 
	"key" VARCHAR(512), 
	value_json TEXT, 
	PRIMARY KEY (trial_user_attribute_id), 
	UNIQUE (trial_id, "key"), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
INSERT INTO "trial_user_attributes" VALUES(1,1,'role','"reference"');
INSERT INTO "trial_user_attributes" VALUES(2,1,'config','{}');
INSERT INTO "trial_user_attributes" VALUES(3,1,'runs','[{"value": 0.008027908000258321, "wall": 0.008027908000258321, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}, "secondary": {}, "block": "0.0", "seq": 0, "relative": 1.2503746650527643}, {"value": 0.006420402000003378, "wall": 0.006420402000003378, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}, "secondary": {}, "block": "0.1", "seq": 1, "relative": 1.0}, {"value": 0.004187845000160451, "wall": 0.004187845000160451, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}, "secondary": {}, "block": "0.2", "seq": 2, "relative": 0.6522714621542774}]');
INSERT INTO "trial_user_attributes" VALUES(4,2,'config','{"btl_vader_eager_limit": 16384}');
INSERT INTO "trial_user_attributes" VALUES(5,2,'role','"search"');
INSERT INTO "trial_user_attributes" VALUES(6,3,'config','{"btl_vader_eager_limit": 8192}');
INSERT INTO "trial_user_attributes" VALUES(7,3,'role','"search"');
INSERT INTO "trial_user_attributes" VALUES(8,2,'runs','[{"value": 0.0077712659999633615, "wall": 0.0077712659999633615, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}, "secondary": {}, "block": "1.0", "seq": 3, "relative": 1.855671831136448}]');
INSERT INTO "trial_user_attributes" VALUES(9,3,'runs','[{"value": 0.004335741999966558, "wall": 0.004335741999966558, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}, "secondary": {}, "block": "1.0", "seq": 4, "relative": 0.6128908684170645}, {"value": 0.006272093999996287, "wall": 0.006272093999996287, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}, "secondary": {}, "block": "1.1", "seq": 6, "relative": 1.132530137289973}]');
INSERT INTO "trial_user_attributes" VALUES(10,4,'role','"control"');
INSERT INTO "trial_user_attributes" VALUES(11,4,'config','{}');
INSERT INTO "trial_user_attributes" VALUES(12,4,'runs','[{"value": 0.007074247999753425, "wall": 0.007074247999753425, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}, "secondary": {}, "block": "1.1", "seq": 5, "relative": null}, {"value": 0.004335561000061716, "wall": 0.004335561000061716, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}, "secondary": {}, "block": "1.2", "seq": 7, "relative": null}]');
INSERT INTO "trial_user_attributes" VALUES(13,5,'config','{"btl_vader_eager_limit": 8192}');
INSERT INTO "trial_user_attributes" VALUES(14,5,'role','"duplicate"');
INSERT INTO "trial_user_attributes" VALUES(15,5,'duplicate_of','2');
INSERT INTO "trial_user_attributes" VALUES(16,6,'config','{"btl_vader_eager_limit": 8192}');
INSERT INTO "trial_user_attributes" VALUES(17,6,'role','"duplicate"');
INSERT INTO "trial_user_attributes" VALUES(18,6,'duplicate_of','2');
INSERT INTO "trial_user_attributes" VALUES(19,7,'config','{"btl_vader_eager_limit": 4096}');
INSERT INTO "trial_user_attributes" VALUES(20,7,'role','"search"');
INSERT INTO "trial_user_attributes" VALUES(21,7,'runs','[{"value": 0.007437058999585133, "wall": 0.007437058999585133, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}, "secondary": {}, "block": "6.0", "seq": 8, "relative": 1.7153625561903678}]');
CREATE TABLE trial_values (
	trial_value_id INTEGER NOT NULL, 
	trial_id INTEGER NOT NULL, 
	objective INTEGER NOT NULL, 
	value FLOAT, 
	value_type VARCHAR(7) NOT NULL, 
	PRIMARY KEY (trial_value_id), 
	UNIQUE (trial_id, objective), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
INSERT INTO "trial_values" VALUES(1,1,0,1.0,'FINITE');
INSERT INTO "trial_values" VALUES(2,4,0,1.0,'FINITE');
INSERT INTO "trial_values" VALUES(3,2,0,1.85567183113644795788e+00,'FINITE');
INSERT INTO "trial_values" VALUES(4,3,0,8.72710502853518699239e-01,'FINITE');
INSERT INTO "trial_values" VALUES(5,5,0,8.72710502853518699239e-01,'FINITE');
INSERT INTO "trial_values" VALUES(6,6,0,8.72710502853518699239e-01,'FINITE');
INSERT INTO "trial_values" VALUES(7,7,0,1.71536255619036781538e+00,'FINITE');
CREATE TABLE trials (
	trial_id INTEGER NOT NULL, 
	number INTEGER, 
	study_id INTEGER, 
	state VARCHAR(8) NOT NULL, 
	datetime_start DATETIME, 
	datetime_complete DATETIME, 
	PRIMARY KEY (trial_id), 
	FOREIGN KEY(study_id) REFERENCES studies (study_id)
);
INSERT INTO "trials" VALUES(1,0,1,'COMPLETE','2026-11-23 22:09:26.391270','2026-11-23 22:09:26.468030');
INSERT INTO "trials" VALUES(2,1,1,'COMPLETE','2026-11-23 22:09:26.490177','2026-11-23 22:09:26.631543');
INSERT INTO "trials" VALUES(3,2,1,'COMPLETE','2026-11-23 22:09:26.518307','2026-11-23 22:09:26.640165');
INSERT INTO "trials" VALUES(4,3,1,'COMPLETE','2026-11-23 22:09:26.571336','2026-11-23 22:09:26.622872');
INSERT INTO "trials" VALUES(5,4,1,'COMPLETE','2026-11-23 22:09:26.650065','2026-11-23 22:09:26.674728');
INSERT INTO "trials" VALUES(6,5,1,'COMPLETE','2026-11-23 22:09:26.682091','2026-11-23 22:09:26.705094');
INSERT INTO "trials" VALUES(7,6,1,'COMPLETE','2026-11-23 22:09:26.712545','2026-11-23 22:09:26.757876');
CREATE TABLE version_info (
	version_info_id INTEGER NOT NULL, 
	schema_version INTEGER, 
	library_version VARCHAR(256), 
	PRIMARY KEY (version_info_id), 
	CHECK (version_info_id=1)
);
INSERT INTO "version_info" VALUES(1,12,'5.0.0');
CREATE UNIQUE INDEX ix_studies_study_name ON studies (study_name);
CREATE INDEX ix_trials_study_id ON trials (study_id);
COMMIT;
