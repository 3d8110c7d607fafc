-- Revert pepsi:config_override from pg

begin;

drop function pepsi.telemetry_changed();
drop function pepsi.config_overlay();
drop function pepsi.config_clear(text);
drop function pepsi.config_remove_stage(text);
drop function pepsi.config_unset(text, text);
drop function pepsi.config_set(text, text, text);
drop function pepsi.config_graph_check(text);
drop function pepsi.config_graph();
drop function pepsi.config_value_check(text, text, text);
drop function pepsi.conf_key_typo(text, text);
drop function pepsi.conf_edit_distance(text, text);
drop function pepsi.conf_duration_ms(text);
drop function pepsi.config_key_check(text);
drop function pepsi.config_section_check(text);
drop table pepsi.config_override;
drop function pepsi.config_override_changed();

commit;
